package gdbserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSilentClientDoesNotBlockOthers: a client that connects and says
// nothing holds only its own session. While it sits there (with a 30
// minute idle timeout, the default), eight other clients are served at
// the same time, each from its own connection.
func TestSilentClientDoesNotBlockOthers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- NewServer(testTarget(t), Config{Logf: t.Logf}).Serve(ctx, l, 0) }()

	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			c := &client{t: t, c: conn, r: bufio.NewReader(conn)}
			if got := c.rpc("?"); got != "T08thread:1;" {
				errs <- fmt.Errorf("client %d: ?: %q", i, got)
				return
			}
			if got := c.last("D"); got != "OK" {
				errs <- fmt.Errorf("client %d: D: %q", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not stop: the silent session was not ended by the cancel")
	}
}

// TestIdleTimeoutPerSession: each session has its own idle timeout. The
// silent client is disconnected by its timeout while a client that keeps
// talking keeps its session.
func TestIdleTimeoutPerSession(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const idle = 300 * time.Millisecond
	go NewServer(testTarget(t), Config{IdleTimeout: idle, Logf: t.Logf}).Serve(ctx, l, 0)

	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	talker, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer talker.Close()
	talker.SetDeadline(time.Now().Add(30 * time.Second))
	c := &client{t: t, c: talker, r: bufio.NewReader(talker)}

	// The silent one is closed by the server: its read ends (EOF or
	// reset), bounded by a generous deadline.
	silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(silent)
		closed <- err
	}()
	// Meanwhile the talker asks something every idle/3: its session must
	// outlive the silent one's.
	for {
		if got := c.rpc("?"); got != "T08thread:1;" {
			t.Fatalf("talker: ?: %q", got)
		}
		select {
		case err := <-closed:
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the silent session was never ended")
			}
			if got := c.rpc("g"); len(got) < 128 {
				t.Errorf("talker after the silent session ended: g: %q", got)
			}
			return
		case <-time.After(idle / 3):
		}
	}
}

// TestSessionLimitDropsLongestIdle: with every session slot held by a
// client that says nothing (the default limit, 16, and the default 30
// minute idle timeout), one more client is served at once: the session
// idle longest (the first, as one of the others has just talked) is
// dropped to make room, its connection closed, and the log names it
// (issue 23 item 6: the 17th client got no reply and no log line).
func TestSessionLimitDropsLongestIdle(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu  sync.Mutex
		log []string
	)
	logf := func(format string, args ...any) {
		mu.Lock()
		log = append(log, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	done := make(chan error, 1)
	go func() { done <- NewServer(testTarget(t), Config{Logf: logf}).Serve(ctx, l, 0) }()
	waitLog := func(want string) {
		t.Helper()
		for range 400 {
			mu.Lock()
			for _, m := range log {
				if strings.Contains(m, want) {
					mu.Unlock()
					return
				}
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no log line %q in %q", want, log)
	}
	var idle []net.Conn
	for i := range DefaultMaxSessions {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
		waitLog(fmt.Sprintf("session %d: ", i+1))
	}
	// Session 1 talks once: now session 2 is the one idle longest.
	c1 := &client{t: t, c: idle[0], r: bufio.NewReader(idle[0])}
	idle[0].SetDeadline(time.Now().Add(20 * time.Second))
	if got := c1.rpc("?"); got != "T08thread:1;" {
		t.Fatalf("session 1: ?: %q", got)
	}
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	c := &client{t: t, c: conn, r: bufio.NewReader(conn)}
	if got := c.rpc("?"); got != "T08thread:1;" {
		t.Fatalf("client 17: ?: %q", got)
	}
	waitLog("session 2: dropped to make room for session 17: 16 sessions at once is the limit")
	idle[1].SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := idle[1].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the dropped session's connection: %v, want EOF", err)
	}
	if got := c1.rpc("?"); got != "T08thread:1;" {
		t.Errorf("session 1 was disturbed: %q", got)
	}
	cancel()
	<-done
}
