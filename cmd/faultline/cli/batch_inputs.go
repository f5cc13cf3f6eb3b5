package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/crashdump"
)

// Expanding analyze's arguments into dump files.
//
// An argument that names a file is that dump, whatever it holds (an error
// later if it is not a dump). A directory is searched recursively, and a
// glob pattern (*, ?, [...] and ** for any number of directories) is
// expanded here, not by the shell, so that quoting works the same on every
// shell and platform. In a directory or among a glob's matches:
//   - *.json files are dump manifests, except JSON whose "schema" names
//     something else (an analysis saved next to the dumps);
//   - other files are dumps when their content is one of the formats
//     crashdump detects (CrashCatcher, Zephyr, Memfault, ...);
//   - files a manifest of the same search references as a memory region
//     ("memory": [{"file": "ram.bin"}]) are not dumps themselves;
//   - names starting with "." are skipped (.git, editor files);
//   - symbolic links are followed, to dumps and to directories, each
//     directory searched once however many links lead to it.
//
// The matches of each directory or pattern are sorted by path; explicit
// files keep their place on the command line; a file a directory or a
// pattern finds again is not decoded twice.

// inputError is an argument that gave no dump.
type inputError struct {
	arg string
	err error
}

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// hasGlobMeta reports whether s is a pattern rather than a name.
func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// inputSet is the expanded list of dump paths.
type inputSet struct {
	paths    []string
	seen     map[string]bool
	problems []inputError // arguments that matched nothing or could not be read
	batch    bool         // a directory or a pattern was given

	// The content of the dump files the search read (every manifest, to
	// find the files it references), handed to the load so that it does
	// not read them again: at most inputCacheMax bytes in all, each
	// dropped when taken.
	mu       sync.Mutex
	contents map[string][]byte
	cached   int64
}

// inputCacheMax bounds the dump file contents an inputSet keeps between
// the search and the loads.
const inputCacheMax = 32 << 20

// take returns (and forgets) the content of p the search read, or nil.
// Safe for concurrent use.
func (s *inputSet) take(p string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := s.contents[p]
	delete(s.contents, p)
	return data
}

// expandInputs expands analyze's arguments.
func expandInputs(args []string) *inputSet {
	s := &inputSet{seen: map[string]bool{}}
	for _, a := range args {
		st, err := os.Stat(a)
		switch {
		case err == nil && st.IsDir():
			s.batch = true
			files, err := walkDir(a)
			if err != nil {
				s.problems = append(s.problems, inputError{a, err})
			}
			s.addCandidates(files, a)
		case err == nil || !hasGlobMeta(a):
			// A file, or a name that does not exist: Load says what is wrong.
			s.add(a)
		default:
			s.batch = true
			files, err := expandGlob(a)
			if err != nil {
				s.problems = append(s.problems, inputError{a, err})
				continue
			}
			s.addCandidates(files, a)
		}
	}
	return s
}

// add adds an explicit file: always, even twice, as analyze always did.
func (s *inputSet) add(p string) {
	s.seen[filepath.Clean(p)] = true
	s.paths = append(s.paths, p)
}

// addCandidates keeps the files that are dumps (see above), sorted.
func (s *inputSet) addCandidates(files []string, arg string) {
	slices.Sort(files)
	var manifests, others []string
	var jsons []string
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".json") {
			jsons = append(jsons, f)
		} else {
			others = append(others, f)
		}
	}
	// The maps below get an entry per manifest (per file for seen): sized
	// at once, they are not rebuilt again and again as a batch of
	// thousands of dumps fills them.
	referenced := make(map[string]bool, len(jsons))
	// Reading every manifest is the part of a large batch that runs
	// before the workers start: spread it over the cores.
	type refs struct {
		paths []string
		ok    bool
		data  []byte
	}
	read := make([]refs, len(jsons))
	parallel(len(jsons), func(i int) {
		read[i].paths, read[i].data, read[i].ok = readManifestRefs(jsons[i])
	})
	content := make(map[string][]byte, len(jsons))
	for i, f := range jsons {
		if !read[i].ok {
			continue // another tool's JSON
		}
		for _, r := range read[i].paths {
			referenced[r] = true
		}
		manifests = append(manifests, f)
		if read[i].data != nil {
			content[f] = read[i].data
		}
	}
	var keep []string
	keep = append(keep, manifests...)
	isDump := make([]bool, len(others))
	otherData := make([][]byte, len(others))
	parallel(len(others), func(i int) {
		if !referenced[filepath.Clean(others[i])] {
			isDump[i], otherData[i] = detectDump(others[i])
		}
	})
	for i, f := range others {
		if isDump[i] {
			keep = append(keep, f)
			content[f] = otherData[i]
		}
	}
	slices.Sort(keep)
	if len(s.seen) == 0 {
		s.seen = make(map[string]bool, len(keep))
	}
	if len(keep) == 0 {
		s.problems = append(s.problems, inputError{arg, fmt.Errorf("%s: no crash dump found", arg)})
	}
	for _, f := range keep {
		if key := filepath.Clean(f); !s.seen[key] {
			s.seen[key] = true
			s.paths = append(s.paths, f)
			if data := content[f]; data != nil && s.cached+int64(len(data)) <= inputCacheMax {
				if s.contents == nil {
					s.contents = make(map[string][]byte, len(keep))
				}
				s.contents[f] = data
				s.cached += int64(len(data))
			}
		}
	}
}

// parallel calls fn(0) .. fn(n-1) on up to GOMAXPROCS goroutines and
// returns when all have returned.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// readManifestRefs returns the cleaned paths of the region files a JSON
// manifest references, and false when the file is JSON of another schema.
// A file that does not parse is kept (ok): loading it says what is wrong.
// data is the file's content when it could be read.
func readManifestRefs(p string) (refs []string, data []byte, ok bool) {
	data, err := readSmall(p, crashdump.MaxManifestSize)
	if err != nil {
		return nil, nil, true
	}
	schema, files, err := crashdump.ManifestRefs(data)
	if err != nil {
		return nil, data, true
	}
	if schema != nil && *schema != crashdump.FormatNative {
		return nil, nil, false
	}
	for _, f := range files {
		refs = append(refs, filepath.Join(filepath.Dir(p), filepath.FromSlash(f)))
	}
	return refs, data, true
}

// detectDump reports whether a file that is not a manifest holds a dump
// format crashdump recognises, and its content when it does.
func detectDump(p string) (bool, []byte) {
	data, err := readSmall(p, crashdump.MaxManifestSize)
	if err != nil || len(data) == 0 {
		return false, nil
	}
	f, ok := crashdump.Detect(data)
	if !ok || f.Name == crashdump.FormatNative {
		return false, nil
	}
	return true, data
}

// maxWalkDepth bounds how deep walkDir descends (symbolic links to
// directories included).
const maxWalkDepth = 64

// walkDir lists the regular files under dir, skipping dot names. Symbolic
// links are followed, to files and to directories alike (a directory of
// links to dumps is a directory of dumps); a directory reached again (a
// link loop, or two links to one directory) is searched once, and a
// dangling link is skipped.
func walkDir(dir string) ([]string, error) {
	var (
		files   []string
		visited = map[string]bool{}
	)
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return err
		}
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
		if visited[real] || depth > maxWalkDepth {
			return nil
		}
		visited[real] = true
		es, err := os.ReadDir(d)
		if err != nil {
			if d == dir {
				return err
			}
			return nil // an unreadable subdirectory: skipped, as before
		}
		for _, e := range es {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(d, e.Name())
			typ := e.Type()
			if typ&fs.ModeSymlink != 0 {
				st, err := os.Stat(p)
				if err != nil {
					continue // dangling
				}
				typ = st.Mode().Type()
			}
			switch {
			case typ.IsDir():
				if err := walk(p, depth+1); err != nil {
					return err
				}
			case typ.IsRegular():
				files = append(files, p)
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		return files, fmt.Errorf("%s: %w", dir, err)
	}
	return files, nil
}

// expandGlob expands a pattern with *, ?, [...] inside a path element and
// ** for zero or more directories (slash-separated; on Windows the
// separator is accepted too). A directory that matches is searched
// recursively. Names starting with "." match only a pattern element that
// starts with ".".
func expandGlob(pattern string) ([]string, error) {
	pat := filepath.ToSlash(pattern)
	for _, el := range strings.Split(pat, "/") {
		if _, err := path.Match(el, ""); err != nil && el != "**" {
			return nil, usagef("%s: bad pattern: %v", pattern, err)
		}
	}
	// The fixed leading directories are the root of the search.
	elems := strings.Split(pat, "/")
	i := 0
	for i < len(elems)-1 && !hasGlobMeta(elems[i]) {
		i++
	}
	root := strings.Join(elems[:i], "/")
	switch {
	case root == "" && strings.HasPrefix(pat, "/"):
		root = "/"
	case root == "":
		root = "."
	}
	rest := elems[i:]
	var out []string
	err := filepath.WalkDir(filepath.FromSlash(root), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == filepath.FromSlash(root) {
				return err
			}
			return nil // unreadable subdirectory: skip it
		}
		rel, rerr := filepath.Rel(filepath.FromSlash(root), p)
		if rerr != nil || rel == "." {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if matchElems(rest, parts) {
			if e.IsDir() {
				files, _ := walkDir(p)
				out = append(out, files...)
				return filepath.SkipDir
			}
			typ := e.Type()
			if typ&fs.ModeSymlink != 0 {
				// A link that matches: its target, a dump or a
				// directory of them.
				if st, err := os.Stat(p); err == nil {
					typ = st.Mode().Type()
				}
				if typ.IsDir() {
					files, _ := walkDir(p)
					out = append(out, files...)
					return nil
				}
			}
			if typ.IsRegular() {
				out = append(out, p)
			}
			return nil
		}
		if e.IsDir() && !prefixCanMatch(rest, parts) {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("%s: %w", pattern, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no file matches", pattern)
	}
	return out, nil
}

// matchElems matches path elements against pattern elements, "**"
// matching any number of elements.
func matchElems(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(name); k++ {
			if k > 0 && strings.HasPrefix(name[k-1], ".") {
				return false
			}
			if matchElems(pat[1:], name[k:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 || !matchElem(pat[0], name[0]) {
		return false
	}
	return matchElems(pat[1:], name[1:])
}

func matchElem(pat, name string) bool {
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pat, ".") {
		return false
	}
	ok, _ := path.Match(pat, name)
	return ok
}

// prefixCanMatch reports whether a directory whose path elements are dir
// may hold matches of pat.
func prefixCanMatch(pat, dir []string) bool {
	if len(dir) == 0 {
		return true
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return true
	}
	if !matchElem(pat[0], dir[0]) {
		return false
	}
	return prefixCanMatch(pat[1:], dir[1:])
}
