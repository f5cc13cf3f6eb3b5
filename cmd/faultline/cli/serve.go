package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	fleetsrv "github.com/faultline-dev/faultline/fleet"
	"github.com/faultline-dev/faultline/fleet/server"
)

// defaultServeListen is where serve listens without --listen.
const defaultServeListen = "127.0.0.1:8080"

func newServe() *cobra.Command {
	var (
		data, listen, db, tokenFile string
		workers                     int
		workerOnly                  bool
		lease                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --data DIR [--listen ADDR] [--db DB] [--workers N] [--token-file FILE] | serve --worker --db postgres://...",
		Short: "Run the crash server: upload ELFs and dumps over HTTP, decode them, group them in buckets",
		Long: `serve runs faultline's crash server. Devices, gateways and CI jobs upload
firmware ELFs and crash dumps (faultline upload, or POST /api/v1/symbols and
/api/v1/dumps); workers decode each dump with the ELF of its build ID (else
the one it pairs with by content), and the API lists the crash buckets with
their counts, devices and versions. A dump whose ELF has not arrived waits
and is decoded when it does.

  faultline serve --data ./crashes                 (everything in ./crashes)

--data DIR holds the uploaded files (content-addressed) and, without --db,
an SQLite database. Without --token-file the server listens on loopback
only; with one, every request needs a token (docs/cli.md, "serve").

To scale out, share a PostgreSQL database (it then keeps the files too):

  faultline serve --db postgres://USER:PASSWORD@HOST/DB --listen 0.0.0.0:8080 --token-file tokens
  faultline serve --worker --db postgres://USER:PASSWORD@HOST/DB   (on each decoding machine)

--worker runs workers only (no HTTP): any number of them, on any machines,
take dumps from the database's queue; a worker killed mid-decode leaves its
dump to another once its --lease ends.`,
		Args: exactArgs(0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workerOnly && !fleetsrv.IsPostgres(db) {
				return usagef("--worker needs --db postgres://... (the database the server and every worker share)")
			}
			if data == "" && !fleetsrv.IsPostgres(db) {
				return usagef("--data DIR is required (the directory for the uploaded files and the database)")
			}
			if workers < 0 || workers > 1024 {
				return usagef("--workers %d: want 0..1024", workers)
			}
			if workerOnly && workers == 0 {
				return usagef("--worker --workers 0 would decode nothing")
			}
			if lease < time.Second || lease > 24*time.Hour {
				return usagef("--lease %s: want 1s..24h", lease)
			}
			if workerOnly {
				return runWorkerOnly(cmd, db, workers, lease)
			}
			var tokens *server.Tokens
			if tokenFile != "" {
				t, err := server.LoadTokens(tokenFile)
				if err != nil {
					return usagef("--token-file %v", err)
				}
				tokens = t
			} else if err := server.CheckListen(listen); err != nil {
				return usageError{err}
			}
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return usagef("--listen %q: want HOST:PORT, e.g. %s: %v", listen, defaultServeListen, err)
			}
			stderr := cmd.ErrOrStderr()
			var logMu sync.Mutex
			logf := func(format string, args ...any) {
				logMu.Lock()
				defer logMu.Unlock()
				fmt.Fprintf(stderr, "faultline serve: "+format+"\n", args...)
			}
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			in, err := fleetsrv.Open(ctx, fleetsrv.Config{Data: data, DB: db, Workers: workers, Tokens: tokens, Lease: lease, Logf: logf})
			if err != nil {
				return err
			}
			defer in.Close()
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			srv := &http.Server{Handler: in.Handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Minute,
				IdleTimeout: 2 * time.Minute, ErrorLog: nil}
			where := "an SQLite database and the files in " + data
			if db != "" {
				where = "database " + db
				if fleetsrv.IsPostgres(db) {
					where = "PostgreSQL, the files in it too"
				}
			}
			auth := "no token file: loopback only"
			if tokens != nil {
				auth = "tokens from " + tokenFile
			}
			logf("listening on http://%s (%s; %d workers; %s)", l.Addr(), where, workers, auth)
			var wg sync.WaitGroup
			wctx, cancelWorkers := context.WithCancel(context.Background())
			wg.Add(1)
			go func() {
				defer wg.Done()
				in.RunWorkers(wctx)
			}()
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(l) }()
			select {
			case err = <-errc:
			case <-ctx.Done():
				logf("stopping")
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = srv.Shutdown(sctx)
				cancel()
			}
			cancelWorkers()
			wg.Wait()
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "directory of the uploaded files and (without --db) the SQLite database; created when missing (required unless --db is PostgreSQL, which keeps the files too)")
	f.StringVar(&listen, "listen", defaultServeListen, "TCP address of the HTTP API and pages (loopback only without --token-file)")
	f.StringVar(&db, "db", "", "database: an SQLite file (default DIR/"+fleetsrv.DBFile+") or postgres://USER:PASSWORD@HOST/NAME")
	f.IntVar(&workers, "workers", runtime.NumCPU(), "dumps decoded at once in this process (0: none; another process decodes)")
	f.BoolVar(&workerOnly, "worker", false, "run workers only, no HTTP server, on the queue of --db postgres://... (any number of such processes on any machines)")
	f.DurationVar(&lease, "lease", 2*time.Minute, "how long a dump being decoded stays its worker's; a dump whose worker died is decoded again after it")
	f.StringVar(&tokenFile, "token-file", "", "tokens and their roles, one \"ROLES TOKEN\" a line (ROLES: upload, read or upload,read); every request then needs Authorization: Bearer TOKEN")
	return cmd
}

// runWorkerOnly is serve --worker: decode dumps from the shared
// PostgreSQL queue until SIGINT or SIGTERM.
func runWorkerOnly(cmd *cobra.Command, db string, workers int, lease time.Duration) error {
	stderr := cmd.ErrOrStderr()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "faultline serve --worker: "+format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	in, err := fleetsrv.Open(ctx, fleetsrv.Config{DB: db, Workers: workers, Lease: lease, Logf: logf})
	if err != nil {
		return err
	}
	defer in.Close()
	logf("decoding from PostgreSQL with %d workers (lease %s)", workers, lease)
	err = in.RunWorkers(ctx)
	logf("stopping")
	return err
}
