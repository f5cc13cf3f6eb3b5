// Package pgtest gives tests a real PostgreSQL database.
//
// With FAULTLINE_TEST_POSTGRES set to a connection string (a user allowed
// to create databases), each test gets a fresh database on that server.
// Otherwise the first test that asks starts a throwaway cluster for the
// whole test binary from Debian's postgresql package (initdb and postgres
// under /usr/lib/postgresql/*/bin, or on PATH): its data directory and
// Unix socket live in a new directory under the system temp directory,
// it listens on no TCP port, and it trusts local connections. initdb
// refuses to run as root, so under root (CI) the cluster runs as the
// "postgres" user that the Debian package creates. Main stops the
// cluster when the tests end; should the test binary be killed first,
// the server gets SIGQUIT from the kernel (parent-death signal) and
// stops too.
//
// When PostgreSQL is missing the test is skipped, or fails under
// FAULTLINE_REQUIRE_TOOLS=1 (testtool.Missing), so `make test` never
// passes without having run the PostgreSQL tests.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/testtool"
	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the connection string of
// an existing server to use instead of starting one.
const EnvDSN = "FAULTLINE_TEST_POSTGRES"

var (
	startOnce sync.Once
	shared    *cluster
	startErr  error
	dbSeq     atomic.Int64
)

// DSN returns the connection string of a new, empty database that is
// dropped when tb ends. It skips or fails tb (testtool.Missing) when no
// PostgreSQL can be had.
func DSN(tb testing.TB) string {
	tb.Helper()
	admin, err := adminDSN()
	if err != nil {
		if errors.Is(err, errNotInstalled) {
			testtool.Missing(tb, err.Error())
		}
		tb.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", redact(admin), err)
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("faultline_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(admin, name)
}

// Main runs the tests of a package that uses DSN and then stops the
// cluster they started, if any. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	os.Exit(code)
}

var errNotInstalled = errors.New("PostgreSQL is not installed (Debian's postgresql package; .ci/install-deps.sh installs it), or set " + EnvDSN)

func adminDSN() (string, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn, nil
	}
	startOnce.Do(func() { shared, startErr = start() })
	if startErr != nil {
		return "", startErr
	}
	return shared.dsn, nil
}

// withDatabase returns dsn (a URL or a key=value string) naming database
// name instead.
func withDatabase(dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return dsn + " dbname=" + name
}

func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxx")
		}
		return u.String()
	}
	return dsn
}

// binDir finds the directory holding initdb and postgres: the newest
// Debian version under /usr/lib/postgresql, else PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	initdb, err1 := exec.LookPath("initdb")
	_, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return filepath.Dir(initdb), nil
	}
	return "", errNotInstalled
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

type cluster struct {
	dir  string // holds data/, the socket and server.log
	dsn  string
	cmd  *exec.Cmd
	done chan error // the postmaster's exit
}

// start initialises and starts a cluster for this process.
func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faultline-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	var cred *syscall.Credential
	owner := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as (Debian's postgresql package creates it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		owner = u.Username
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb (as %q): %v\n%s", owner, err, out)
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		os.Chown(logf.Name(), int(cred.Uid), int(cred.Gid))
	}
	const port = "5432" // only names the socket file in our own directory
	started := make(chan error, 1)
	c.done = make(chan error, 1)
	go func() {
		// The parent-death signal is sent when the thread that started the
		// child exits: keep this goroutine on its thread until the server
		// has stopped.
		runtime.LockOSThread()
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-p", port,
			"-c", "listen_addresses=", "-c", "max_connections=200",
			"-c", "shared_buffers=64MB", "-c", "log_min_messages=warning")
		cmd.Dir = dir
		cmd.Stdout = logf
		cmd.Stderr = logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.cmd = cmd
		started <- nil
		c.done <- cmd.Wait()
		logf.Close()
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start postgres: %v", err)
	}
	c.dsn = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "port": {port}, "sslmode": {"disable"}}.Encode()}).String()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, c.dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return c, nil
		}
		select {
		case werr := <-c.done:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres exited at start (%v):\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			c.stop()
			return nil, fmt.Errorf("postgres did not accept connections within 60 s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop shuts the server down (fast shutdown, then SIGQUIT after 30 s)
// and removes its directory.
func (c *cluster) stop() error {
	defer os.RemoveAll(c.dir)
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
		return nil
	case <-time.After(30 * time.Second):
		c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.done
		return errors.New("postgres did not stop within 30 s of SIGINT; sent SIGQUIT")
	}
}
