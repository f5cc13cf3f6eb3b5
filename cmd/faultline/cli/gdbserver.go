package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver"
)

// defaultListen is where gdbserver listens without --listen or --stdio:
// loopback, on OpenOCD's customary GDB port.
const defaultListen = "127.0.0.1:3333"

func newGDBServer() *cobra.Command {
	var (
		elfPath     string
		listen      string
		stdio       bool
		allowRemote bool
		sessions    int
		idle        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "gdbserver --elf FW.elf [--listen ADDR | --stdio] DUMP",
		Short: "Serve a crash dump to GDB as a stopped, read-only remote target",
		Long: `gdbserver speaks the GDB remote serial protocol so GDB can inspect a crash
dump as if the device were still halted at the fault: bt, info registers,
print, x. Memory is the dump's regions over the ELF's loadable segments;
the target is read-only and cannot run.

  faultline gdbserver --elf fw.elf crash.json            (listens on ` + defaultListen + `)
  (gdb) target remote 127.0.0.1:3333

  (gdb) target remote | faultline gdbserver --stdio --elf fw.elf crash.json

--listen serves every GDB connection in a session of its own, at the same
time, until interrupted (or --sessions N); at most 16 run at once, and
when one more client connects, the session idle longest is dropped to make
room (the log names it). The dump holds the device's RAM and the protocol has no
authentication, so only loopback addresses are accepted unless
--allow-remote is given. With --stdio the protocol runs on standard input
and output and diagnostics go to standard error. Run "set osabi none" in
Debian's gdb-multiarch, which otherwise assumes GNU/Linux.`,
		Args: exactArgs(1, "one DUMP"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if elfPath == "" {
				return usagef("--elf is required")
			}
			if stdio && cmd.Flags().Changed("listen") {
				return usagef("--stdio and --listen exclude each other")
			}
			if sessions < 0 {
				return usagef("--sessions %d: want 0 (no limit) or more", sessions)
			}
			if idle < 0 {
				return usagef("--idle-timeout %v: want a positive duration, or 0 for none", idle)
			}
			elf, err := openFirmware(elfPath)
			if err != nil {
				return err
			}
			defer elf.Close()
			d, err := crashdump.Load(a[0])
			if err != nil {
				return err
			}
			t, err := gdbserver.NewTarget(d, elf)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			cfg := gdbserver.Config{IdleTimeout: idle, Logf: func(format string, args ...any) {
				fmt.Fprintf(stderr, "faultline gdbserver: "+format+"\n", args...)
			}}
			if idle == 0 {
				cfg.IdleTimeout = -1
			}
			srv := gdbserver.NewServer(t, cfg)
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if stdio {
				if err := srv.ServeConn(ctx, stdioStream{cmd.InOrStdin(), cmd.OutOrStdout()}); err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			}
			if listen == "" {
				listen = defaultListen
			}
			l, err := listenTCP(listen, allowRemote)
			if err != nil {
				return err
			}
			defer l.Close()
			fmt.Fprintf(stderr, "faultline gdbserver: %s (%s, stopped with %s) on %s; in GDB: target remote %s\n",
				d.Path, t.Fault().Exception, t.Signal(), l.Addr(), l.Addr())
			return srv.Serve(ctx, l, sessions)
		},
	}
	f := cmd.Flags()
	f.StringVar(&elfPath, "elf", "", "firmware ELF file (required)")
	f.StringVar(&listen, "listen", "", "TCP address to serve GDB on (default "+defaultListen+")")
	f.BoolVar(&stdio, "stdio", false, "speak the protocol on stdin/stdout (target remote | faultline gdbserver --stdio ...)")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow a --listen address that is not loopback (the dump's RAM becomes readable by anyone who connects)")
	f.IntVar(&sessions, "sessions", 0, "with --listen, exit after this many GDB sessions (0: serve until interrupted)")
	f.DurationVar(&idle, "idle-timeout", gdbserver.DefaultIdleTimeout, "end a GDB session after this long without a packet (0: never)")
	return cmd
}

// contextOf returns the command's context, or a background one when it
// was executed without.
func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// listenTCP listens on addr. Unless allowRemote it refuses, before
// binding, an address that does not resolve to a loopback IP: ":3333"
// (every interface) and "0.0.0.0:3333" are refused, "localhost:0" is
// accepted.
func listenTCP(addr string, allowRemote bool) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usagef("--listen %q: want HOST:PORT, e.g. %s: %v", addr, defaultListen, err)
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, usagef("--listen %q: %v", addr, err)
	}
	if !allowRemote && !ta.IP.IsLoopback() {
		return nil, usagef("--listen %s: not a loopback address; the protocol has no authentication and would serve the dump's memory to the network: pass --allow-remote to do that anyway", addr)
	}
	l, err := net.ListenTCP("tcp", ta)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	return l, nil
}

// stdioStream joins the command's input and output into one stream.
type stdioStream struct {
	io.Reader
	io.Writer
}
