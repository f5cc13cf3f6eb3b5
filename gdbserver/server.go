package gdbserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxPacket     = 16 << 10
	DefaultMaxBadPackets = 16
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultWriteTimeout  = 30 * time.Second
	DefaultMaxSessions   = 16
	minPacket            = 512 // the smallest MaxPacket: a g reply with FP registers (448 hex digits) must fit
)

// Errors that end a session early. ServeConn wraps them.
var (
	ErrTimeout       = errors.New("gdbserver: timed out")
	ErrBadPackets    = errors.New("gdbserver: too many bad packets")
	ErrNoise         = errors.New("gdbserver: too much line noise")
	ErrServerStopped = errors.New("gdbserver: server stopped")
)

// Config bounds a session. The zero Config uses the defaults.
type Config struct {
	// MaxPacket is the longest packet data accepted and sent (the
	// PacketSize of the qSupported reply). Default 16 KiB; at least 512.
	MaxPacket int
	// MaxBadPackets is how many bad checksums and malformed packets in a
	// row end the session. Default 16.
	MaxBadPackets int
	// IdleTimeout ends a session when the client sends nothing for that
	// long. Default 30 minutes (a person may think at the GDB prompt);
	// negative: no limit.
	IdleTimeout time.Duration
	// WriteTimeout ends a session when the client does not take a reply
	// within it. Default 30 seconds; negative: no limit.
	WriteTimeout time.Duration
	// MaxSessions bounds the sessions Serve runs at once (each has its
	// own idle timeout); at the limit, a new client makes Serve drop the
	// session idle longest. Default 16.
	MaxSessions int
	// Logf receives diagnostics (sessions starting and ending, bad
	// packets). Nil: none. It is never passed protocol data to print on
	// the protocol stream.
	Logf func(format string, args ...any)
}

func (c Config) withDefaults() Config {
	if c.MaxPacket == 0 {
		c.MaxPacket = DefaultMaxPacket
	}
	c.MaxPacket = max(c.MaxPacket, minPacket)
	if c.MaxBadPackets <= 0 {
		c.MaxBadPackets = DefaultMaxBadPackets
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	} else {
		// Sessions run at once: their messages must not interleave.
		var mu sync.Mutex
		logf := c.Logf
		c.Logf = func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logf(format, args...)
		}
	}
	return c
}

// Server serves one Target to GDB clients.
type Server struct {
	target *Target
	cfg    Config
}

// NewServer returns a server of t bounded by cfg.
func NewServer(t *Target, cfg Config) *Server {
	return &Server{target: t, cfg: cfg.withDefaults()}
}

// Serve accepts connections on l and serves each in a session of its
// own, at the same time: a client that connects and then says nothing
// holds only its own session (until its idle timeout), never another
// one's. At most Config.MaxSessions sessions run at once: when one more
// client connects, the session that has been idle longest is dropped
// (its connection closed) to make room, and the log says which, so that
// idle clients can never lock everyone out. Serve returns nil when ctx is
// done (closing l and ending every session), after sessions sessions when
// sessions > 0 (once they have all ended), and the error otherwise when
// Accept fails. A session that fails is logged and does not stop the
// server.
func (s *Server) Serve(ctx context.Context, l net.Listener, sessions int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var (
		mu     sync.Mutex
		active = map[int]*liveSession{}
	)
	for n := 0; sessions <= 0 || n < sessions; n++ {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			cancel()
			return fmt.Errorf("gdbserver: %w", err)
		}
		id := n + 1
		ls := &liveSession{id: id}
		ls.touch()
		sctx, scancel := context.WithCancelCause(ctx)
		ls.cancel = scancel
		mu.Lock()
		if len(active) >= s.cfg.MaxSessions {
			var oldest *liveSession
			for _, a := range active {
				if oldest == nil || a.idleSince() > oldest.idleSince() || (a.idleSince() == oldest.idleSince() && a.id < oldest.id) {
					oldest = a
				}
			}
			delete(active, oldest.id)
			idle := time.Since(time.Unix(0, oldest.idleSince())).Round(time.Millisecond)
			s.cfg.Logf("session %d: dropped to make room for session %d: %d sessions at once is the limit, and it was the one idle longest (nothing received for %v)", oldest.id, id, s.cfg.MaxSessions, idle)
			oldest.cancel(fmt.Errorf("%w: dropped for session %d (the %d-session limit)", ErrDropped, id, s.cfg.MaxSessions))
		}
		active[id] = ls
		mu.Unlock()
		s.cfg.Logf("session %d: %s connected", id, c.RemoteAddr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer scancel(nil)
			err := s.serveConn(sctx, c, ls.touch)
			c.Close()
			mu.Lock()
			delete(active, id)
			mu.Unlock()
			switch {
			case errors.Is(err, ErrDropped):
				// logged when dropped
			case err != nil:
				s.cfg.Logf("session %d: ended: %v", id, err)
			default:
				s.cfg.Logf("session %d: ended", id)
			}
		}()
	}
	return nil
}

// ErrDropped ends a session Serve dropped to make room for a new client
// at the session limit.
var ErrDropped = errors.New("gdbserver: session dropped")

// liveSession is a session Serve runs: when it last received anything,
// and how to end it.
type liveSession struct {
	id     int
	last   atomic.Int64 // time.Now().UnixNano() of the last bytes received
	cancel context.CancelCauseFunc
}

func (l *liveSession) touch()           { l.last.Store(time.Now().UnixNano()) }
func (l *liveSession) idleSince() int64 { return -l.last.Load() } // larger: idle longer

// ServeConn runs one session on rw. It returns nil when the client
// detaches (D), kills (k, vKill) or closes the stream, and an error
// wrapping ErrTimeout, ErrBadPackets, ErrNoise or the stream's error
// otherwise, or ctx's error (its cause) when ctx is done first. rw stays
// open; a goroutine reads it until it reports an error, so the caller
// should close it when ServeConn returns (for --stdio the process exits
// instead).
func (s *Server) ServeConn(ctx context.Context, rw io.ReadWriter) error {
	return s.serveConn(ctx, rw, nil)
}

// serveConn is ServeConn, calling touch (when not nil) whenever bytes
// arrive.
func (s *Server) serveConn(ctx context.Context, rw io.ReadWriter, touch func()) error {
	ss := &session{srv: s, cfg: s.cfg, w: rw, ctx: ctx, parser: newParser(s.cfg.MaxPacket)}
	chunks := make(chan chunk)
	done := make(chan struct{})
	defer close(done)
	go readPump(rw, chunks, done)

	var idle <-chan time.Time
	var timer *time.Timer
	if s.cfg.IdleTimeout > 0 {
		timer = time.NewTimer(s.cfg.IdleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		var c chunk
		select {
		case c = <-chunks:
		case <-idle:
			return fmt.Errorf("%w: nothing received for %v", ErrTimeout, s.cfg.IdleTimeout)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if timer != nil {
			timer.Reset(s.cfg.IdleTimeout)
		}
		if touch != nil && len(c.b) > 0 {
			touch()
		}
		for _, b := range c.b {
			end, err := ss.byte(b)
			if err != nil || end {
				return err
			}
		}
		if c.err == io.EOF {
			return nil
		}
		if c.err != nil {
			return fmt.Errorf("gdbserver: reading: %w", c.err)
		}
	}
}

// chunk is one Read's result.
type chunk struct {
	b   []byte
	err error
}

// readPump reads r until it fails, handing each chunk over; it stops
// early when done is closed while it waits to hand over.
func readPump(r io.Reader, out chan<- chunk, done <-chan struct{}) {
	for {
		buf := make([]byte, 4096)
		n, err := r.Read(buf)
		select {
		case out <- chunk{buf[:n], err}:
		case <-done:
			return
		}
		if err != nil {
			return
		}
	}
}

// session is the state of one client.
type session struct {
	srv    *Server
	cfg    Config
	w      io.Writer
	ctx    context.Context
	parser *parser
	noAck  bool
	last   []byte // the last packet sent, for a NAK
	bad    int    // bad packets and NAKs in a row
	// interrupted is set once an interrupt request was logged.
	interrupted bool
	sel         selection // the thread chosen by Hg, the thread list position
}

// byte feeds one received byte; end reports the session's normal end.
func (ss *session) byte(b byte) (end bool, err error) {
	ev := ss.parser.feed(b)
	switch ev.kind {
	case evNone, evAck:
		return false, nil
	case evInterrupt:
		// The target never runs, so there is nothing to interrupt.
		if !ss.interrupted {
			ss.cfg.Logf("ignoring interrupt requests: the target is not running")
			ss.interrupted = true
		}
		return false, nil
	case evNoise:
		return false, fmt.Errorf("%w: more than %d bytes outside packets or beyond the packet size", ErrNoise, ss.parser.noiseLimit)
	case evNak:
		if ss.noAck || ss.last == nil {
			return false, nil
		}
		if err := ss.strike("the client asked for a packet again"); err != nil {
			return false, err
		}
		return false, ss.write(ss.last)
	case evBadSum:
		if err := ss.strike("bad checksum"); err != nil {
			return false, err
		}
		if ss.noAck {
			return false, nil
		}
		return false, ss.write([]byte{'-'})
	case evOversized:
		if err := ss.strike(fmt.Sprintf("packet longer than %d bytes", ss.cfg.MaxPacket)); err != nil {
			return false, err
		}
		return false, ss.send(text(replyTooLong))
	}
	// evPacket
	data, err := ExpandRLE(ev.data, ss.cfg.MaxPacket)
	if err != nil {
		if err := ss.strike(err.Error()); err != nil {
			return false, err
		}
		return false, ss.send(text(replyBadArgs))
	}
	ss.bad = 0
	r := ss.srv.target.dispatchIn(&ss.sel, data, ss.cfg.MaxPacket)
	if err := ss.send(r); err != nil {
		return false, err
	}
	if r.noAck {
		ss.noAck = true
	}
	return r.end, nil
}

// strike counts one bad packet; too many in a row end the session.
func (ss *session) strike(why string) error {
	ss.bad++
	ss.cfg.Logf("bad packet (%d in a row): %s", ss.bad, why)
	if ss.bad >= ss.cfg.MaxBadPackets {
		return fmt.Errorf("%w: %d in a row, the last: %s", ErrBadPackets, ss.bad, why)
	}
	return nil
}

// send acknowledges the packet just received (unless in no-ack mode) and
// sends the reply.
func (ss *session) send(r reply) error {
	var out []byte
	if !ss.noAck {
		out = append(out, '+')
	}
	if !r.none {
		frame := Frame(r.data)
		ss.last = frame
		out = append(out, frame...)
	}
	if len(out) == 0 {
		return nil
	}
	return ss.write(out)
}

// deadlineWriter is implemented by net.Conn and os.File.
type deadlineWriter interface {
	SetWriteDeadline(time.Time) error
}

// write sends p within the write timeout. When the stream supports write
// deadlines they bound the write; otherwise the write runs in a goroutine
// that is abandoned on timeout (the session ends then).
func (ss *session) write(p []byte) error {
	if ss.cfg.WriteTimeout < 0 {
		_, err := ss.w.Write(p)
		return wrapWrite(err)
	}
	if dw, ok := ss.w.(deadlineWriter); ok && dw.SetWriteDeadline(time.Now().Add(ss.cfg.WriteTimeout)) == nil {
		_, err := ss.w.Write(p)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w: the client took no data for %v", ErrTimeout, ss.cfg.WriteTimeout)
		}
		return wrapWrite(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ss.w.Write(p)
		done <- err
	}()
	t := time.NewTimer(ss.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return wrapWrite(err)
	case <-t.C:
		return fmt.Errorf("%w: the client took no data for %v", ErrTimeout, ss.cfg.WriteTimeout)
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	}
}

func wrapWrite(err error) error {
	if err != nil {
		return fmt.Errorf("gdbserver: writing: %w", err)
	}
	return nil
}
