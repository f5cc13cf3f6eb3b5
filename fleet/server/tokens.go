package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// Role is what a token may do.
type Role string

// The two roles: upload (POST symbols and dumps) and read (the GET
// endpoints and the pages).
const (
	RoleUpload Role = "upload"
	RoleRead   Role = "read"
)

// Roles is a set of roles.
type Roles struct{ upload, read bool }

// Has reports whether the set holds r.
func (rs Roles) Has(r Role) bool {
	switch r {
	case RoleUpload:
		return rs.upload
	case RoleRead:
		return rs.read
	}
	return false
}

// MinTokenLen is the shortest token a token file may hold.
const MinTokenLen = 16

// maxTokenFile bounds the token file.
const maxTokenFile = 1 << 20

// Tokens are the tokens of a token file (docs/cli.md, "serve"): one
// token a line, "ROLES TOKEN", ROLES being upload, read or upload,read;
// blank lines and lines starting with # are ignored.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash  [32]byte
	roles Roles
}

// LoadTokens reads a token file.
func LoadTokens(path string) (*Tokens, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size() > maxTokenFile {
		return nil, fmt.Errorf("%s: %d bytes, more than a token file's %d", path, st.Size(), maxTokenFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTokens(data, path)
}

// ParseTokens parses a token file's content; name is for errors.
func ParseTokens(data []byte, name string) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), maxTokenFile)
	seen := map[[32]byte]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"ROLES TOKEN\" (ROLES: upload, read or upload,read), got %d fields", name, line, len(fields))
		}
		var e tokenEntry
		for _, r := range strings.Split(fields[0], ",") {
			switch Role(r) {
			case RoleUpload:
				e.roles.upload = true
			case RoleRead:
				e.roles.read = true
			default:
				return nil, fmt.Errorf("%s:%d: role %q: want upload or read (comma-separated)", name, line, r)
			}
		}
		tok := fields[1]
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("%s:%d: the token is %d characters: want at least %d", name, line, len(tok), MinTokenLen)
		}
		e.hash = sha256.Sum256([]byte(tok))
		if seen[e.hash] {
			return nil, fmt.Errorf("%s:%d: the same token is given twice", name, line)
		}
		seen[e.hash] = true
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%s: no token in the file (want lines \"ROLES TOKEN\")", name)
	}
	return t, nil
}

// Check finds the request's token (Authorization: Bearer TOKEN, or Basic
// with the token as the password, which a browser asks for) and returns
// its roles.
func (t *Tokens) Check(r *http.Request) (Roles, bool) {
	var tok string
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		tok = strings.TrimSpace(h[7:])
	} else if _, pw, ok := r.BasicAuth(); ok {
		tok = pw
	}
	if tok == "" {
		return Roles{}, false
	}
	h := sha256.Sum256([]byte(tok))
	var found Roles
	ok := false
	for _, e := range t.entries {
		// Constant time over the hashes; every entry is compared.
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.roles, true
		}
	}
	return found, ok
}

// CheckListen refuses an address that is not loopback-only, for a server
// without a token file: anyone who can reach it could upload and read.
func CheckListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %v (want HOST:PORT, such as 127.0.0.1:8080)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	switch {
	case host == "":
		return fmt.Errorf("--listen %s listens on every network interface: without --token-file the server only listens on loopback (127.0.0.1 or [::1]); give a token file to listen on %s", addr, addr)
	case ip == nil:
		return fmt.Errorf("--listen %s: without --token-file the server only listens on a loopback address (127.0.0.1, [::1] or localhost), not on the host name %q", addr, host)
	case !ip.IsLoopback():
		return fmt.Errorf("--listen %s is not a loopback address: without --token-file the server only listens on loopback (127.0.0.1 or [::1]); give a token file (upload and read roles) to listen on %s", addr, host)
	}
	return nil
}
