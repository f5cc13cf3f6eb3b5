package crashdump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// The fast path of the native reader (nativefast.go) against the precise
// reader: for every input, parseNative must give what parseNativePrecise
// alone gives (the same Dump, or the same error with the same field,
// offset and underlying error), reading the same region files in the same
// order, each once; and whatever the fast path accepts on its own, the
// precise reader must accept with the same Dump.

// nativeInput is one manifest with the directory its region files are
// read from ("" for none: readFile is nil).
type nativeInput struct {
	name  string
	data  []byte
	files func(rel string) ([]byte, error)
}

// dirFiles reads region files from dir, as Load does, minus os.Root:
// parseNative checks the paths before it reads.
func dirFiles(dir string) func(string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	}
}

// nativeInputs returns every native manifest under fixtures/ (the QEMU
// oracle dumps, the capture oracle dumps, the hostile native files), and
// every importer fixture (fixtures/import, fixtures/capture) converted to
// a native manifest with its region files by Dump.encode.
func nativeInputs(t testing.TB) []nativeInput {
	t.Helper()
	var out []nativeInput
	for _, pattern := range []string{"qemu/*.json", "capture/oracle/*.json", "hostile/native/*"} {
		paths, err := filepath.Glob(filepath.Join("..", "fixtures", filepath.FromSlash(pattern)))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no fixtures %s: %v", pattern, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, nativeInput{p, b, dirFiles(filepath.Dir(p))})
		}
	}
	var imports []string
	for _, pattern := range []string{"import/*", "import/probe-rs/*", "capture/*.crashcatcher*"} {
		paths, _ := filepath.Glob(filepath.Join("..", "fixtures", filepath.FromSlash(pattern)))
		for _, p := range paths {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				imports = append(imports, p)
			}
		}
	}
	n := 0
	for _, p := range imports {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(b, p, nil)
		if err != nil {
			continue // register text and memory images need each other
		}
		m, files, err := d.encode("import", MaxHexRegion, nil)
		if err != nil {
			t.Fatalf("%s: encode: %v", p, err)
		}
		fs := map[string][]byte{}
		for _, f := range files {
			fs[f.name] = f.data
		}
		out = append(out, nativeInput{p + ".native.json", m, mapFS(fs)})
		n++
	}
	if n < 10 {
		t.Fatalf("only %d importer fixtures decode", n)
	}
	return out
}

// loggedFiles wraps readFile to log the paths read; nil stays nil.
func loggedFiles(readFile func(string) ([]byte, error), log *[]string) func(string) ([]byte, error) {
	if readFile == nil {
		return nil
	}
	return func(rel string) ([]byte, error) {
		*log = append(*log, rel)
		return readFile(rel)
	}
}

// checkNativeFast runs one input through the three readers and reports
// every difference. It returns whether the fast path accepted the input.
func checkNativeFast(t *testing.T, in nativeInput) bool {
	t.Helper()
	var preciseReads, fastReads, bothReads []string
	want, wantErr := parseNativePrecise(in.data, in.name, loggedFiles(in.files, &preciseReads))

	var log readLog
	fast, ok := parseNativeFast(in.data, in.name, loggedFiles(in.files, &fastReads), &log)
	if ok {
		if wantErr != nil {
			t.Errorf("%s: the fast path accepts what the precise reader rejects: %v", in.name, wantErr)
		} else if !reflect.DeepEqual(fast, want) {
			t.Errorf("%s: fast path:\n%+v\nprecise reader:\n%+v", in.name, fast, want)
		}
		if !slices.Equal(fastReads, preciseReads) {
			t.Errorf("%s: the fast path read %q, the precise reader %q", in.name, fastReads, preciseReads)
		}
	}

	got, err := parseNative(in.data, in.name, loggedFiles(in.files, &bothReads))
	if !sameError(err, wantErr) {
		t.Errorf("%s: error\n%#v\nwant\n%#v", in.name, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: parseNative:\n%+v\nprecise reader:\n%+v", in.name, got, want)
	}
	if !slices.Equal(bothReads, preciseReads) {
		t.Errorf("%s: parseNative read %q, the precise reader %q", in.name, bothReads, preciseReads)
	}
	return ok
}

// sameError reports whether two parse errors say the same thing in the
// same place about the same underlying error.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var fa, fb *FormatError
	if !errors.As(a, &fa) || !errors.As(b, &fb) {
		return false
	}
	return fa.Error() == fb.Error() && fa.Field == fb.Field && fa.Offset == fb.Offset && fa.Msg == fb.Msg &&
		reflect.DeepEqual(fa.Err, fb.Err)
}

// TestNativeFastDifferential checks every native dump in fixtures/, and
// mutants of them, through both readers.
func TestNativeFastDifferential(t *testing.T) {
	inputs := nativeInputs(t)
	accepted, mutants, mutantsAccepted := 0, 0, 0
	for _, in := range inputs {
		if checkNativeFast(t, in) {
			accepted++
		}
	}
	// Every valid fixture must take the fast path: it is what the
	// benchmarks measure.
	for _, in := range inputs {
		if strings.Contains(in.name, "hostile") {
			continue
		}
		if _, ok := parseNativeFast(in.data, in.name, in.files, new(readLog)); !ok {
			t.Errorf("%s: a valid fixture misses the fast path", in.name)
		}
	}
	// Mutants: a stride through the fixtures keeps the test short.
	for i, in := range inputs {
		if i%5 != 0 && !strings.Contains(in.name, "hostile") {
			continue
		}
		for k, m := range mutate(in.data, uint64(i)+1) {
			mutants++
			if checkNativeFast(t, nativeInput{fmt.Sprintf("%s~%d", in.name, k), m, in.files}) {
				mutantsAccepted++
			}
		}
	}
	t.Logf("%d inputs, %d through the fast path; %d mutants, %d through the fast path", len(inputs), accepted, mutants, mutantsAccepted)
}

// TestNativeFastCases are inputs the fixtures do not have: each corner of
// the grammar the fast path either decodes exactly or leaves to the
// precise reader.
func TestNativeFastCases(t *testing.T) {
	files := mapFS(map[string][]byte{"ram.bin": ram(), "a/b.bin": ram()[:32], "empty.bin": {}})
	head := `{"schema": "faultline.dump/1", `
	cases := []string{
		sample,
		head + `"registers": {"r13": 1, " PC ": "0X10", "S31": 2, "fp": 3, "ip": 4, "psr": 5, "s0": null}}`,
		head + `"registers": {"sp": 1, "r13": 2}}`,
		head + `"registers": {"pc": 1, "PC": 2}}`,
		head + `"registers": {"pc": "0x1", "pc": "0x1"}}`,
		head + `"registers": {"pc": "0x\u0031"}}`,
		head + `"registers": {"p\u0063": 1}}`,
		head + `"registers": {"pc": 4294967295, "lr": 4294967296}}`,
		head + `"registers": {"pc": 00}}`,
		head + `"registers": {"pc": 1.0}}`,
		head + `"registers": {"pc": 1e2}}`,
		head + `"registers": {"pc": -0}}`,
		head + `"registers": {"pc": "0x"}}`,
		head + `"registers": {"pc": "0x00000000000000000001"}}`,
		head + `"registers": {"pc": "0x1_0"}}`,
		head + `"registers": {"pc": true}}`,
		head + `"registers": []}`,
		head + `"registers": null, "fault": null, "memory": null, "truth": null, "cpu": null}`,
		head + `"fault": {"CFSR": 1, "Hfsr": "0x2", "sfsr": null, "vtor": 4}}`,
		head + `"fault": {"cfsr": 1, "CFSR": 2}}`,
		head + `"fault": {"cfsr\u0000": 1}}`,
		head + `"fault": {"nope": 1}}`,
		head + `"cpu": "cortex-m\u0033"}`,
		head + "\"cpu\": \"caf\xc3\xa9\"}",
		head + "\"cpu\": \"\xff\xfe\"}",
		head + `"cpu": 4}`,
		head + `"memory": []}`,
		head + `"memory": {}}`,
		head + `"memory": [null]}`,
		head + `"memory": [{"address": 0, "hex": ""}]}`,
		head + `"memory": [{"address": 0, "hex": "0"}]}`,
		head + `"memory": [{"address": 0, "hex": "0g"}]}`,
		head + `"memory": [{"address": 0, "hex": "\u0030\u0030"}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "size": 1}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "size": 2}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "size": null}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "size": 4294967296}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "hex": "00"}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "file": "ram.bin"}]}`,
		head + `"memory": [{"address": 0}]}`,
		head + `"memory": [{"hex": "00"}]}`,
		head + `"memory": [{"address": 0, "hex": "00", "other": 1}]}`,
		head + `"memory": [{"address": "0xffffffff", "hex": "00"}]}`,
		head + `"memory": [{"address": "0xffffffff", "hex": "0000"}]}`,
		head + `"memory": [{"address": 0, "file": "ram.bin", "size": 64}, {"address": 64, "file": "a/b.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "ram.bin"}, {"address": 63, "file": "a/b.bin"}]}`,
		head + `"memory": [{"address": 100, "file": "ram.bin"}, {"address": 40, "file": "a/b.bin"}, {"address": 0, "hex": "00"}]}`,
		head + `"memory": [{"address": 100, "file": "ram.bin"}, {"address": 0, "hex": "00"}, {"address": 99, "hex": "0000"}]}`,
		head + `"memory": [{"address": 0, "file": "ram.bin"}, {"address": 0, "file": "missing.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "missing.bin"}, {"address": 0, "file": "ram.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "empty.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "../ram.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "/ram.bin"}]}`,
		head + `"memory": [{"address": 0, "file": ""}]}`,
		head + `"memory": [{"address": 0, "file": "a\/b.bin"}]}`,
		head + `"memory": [{"address": 0, "file": "ram.bin", "size": 65}], "truth": 1}`,
		head + `"memory": [{"address": 0, "file": "ram.bin"}], "truth": {"source": "x"}}`,
		head + `"truth": {"source": "x", "frames": []}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": []}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": null}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"frame": "0x20000660", "sp": "0x20000680", "frames": [{"pc": "0xaf8", "function": "f"}, {"pc": 3104}], "later": 1}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"frame": 1, "sp": null, "frames": []}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"sp": 1, "frames": []}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"frame": 1}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"frame": "0x100000000", "frames": []}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [{"frame": 1, "frames": [{"kind": "odd"}]}]}}`,
		head + `"truth": {"source": "x", "frames": [], "threads": [1]}}`,
		head + `"truth": {"source": "x", "frames": null}}`,
		head + `"truth": {"source": null, "frames": []}}`,
		head + `"truth": {"frames": []}}`,
		head + `"truth": {"source": "x", "frames": [], "stop": null, "more": {"a": [1, {"b": null}]}}}`,
		head + `"truth": {"source": "x", "frames": [], "more": 1, "more": 2}}`,
		head + `"truth": {"source": "x", "frames": [{"pc": null, "line": null, "kind": "normal", "function": null, "x": [true, false]}]}}`,
		head + `"truth": {"source": "x", "frames": [{"kind": "inlined"}]}}`,
		head + `"truth": {"source": "x", "frames": [{"kind": 1}]}}`,
		head + `"truth": {"source": "x", "frames": [{"line": 2147483647}, {"line": "0x7fffffff"}]}}`,
		head + `"truth": {"source": "x", "frames": [{"line": 2147483648}]}}`,
		head + `"truth": {"source": "x", "frames": [{"function": "a\"b\\c\u00e9\ud83d\ude00"}]}}`,
		head + `"truth": {"source": "x", "frames": [{"function": "\ud800"}]}}`,
		head + `"truth": {"source": "x", "frames": [1]}}`,
		head + `"other": {"schema": 1, "a": {"a": 1, "a": 2}}, "x": [1, -2.5e+3, 0.1E-1, "s", true, null]}`,
		head + `"x": 1, "x": 2}`,
		head + `"x": 01}`,
		head + `"x": 1.}`,
		head + `"x": -}`,
		head + `"x": tru}`,
		head + `"x": nulll}`,
		head + `"x": "\x"}`,
		head + `"x": "\u12"}`,
		head + "\"x\": \"a\tb\"}",
		head + "\"x\": \"a\x7fb\"}",
		head + "\"\xff\": 1}",
		head + `"Schema": 1}`,
		`{"cpu": "m4"}`,
		`{"schema": "faultline.dump/2"}`,
		`{"schema": null, "schema": "faultline.dump/1"}`,
		`{"schema": "faultline.dump/1"}` + " \r\n\t",
		`{"schema": "faultline.dump/1"}` + "\x00",
		`{"schema": "faultline.dump/1"} {}`,
		` {"schema": "faultline.dump/1",}`,
		`{"schema": "faultline.dump/1" "cpu": "m4"}`,
		`{"schema" "faultline.dump/1"}`,
		`{schema: "faultline.dump/1"}`,
		`{"schema": "faultline.dump/1"`,
		`[{"schema": "faultline.dump/1"}]`,
		`{"schema": "faultline.dump/1", "x": ` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
		`{"schema": "faultline.dump/1", "x": ` + strings.Repeat(`{"a":`, 300) + "0" + strings.Repeat("}", 300) + `}`,
		`{"schema": "faultline.dump/1", "x": ` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		`{"schema": "faultline.dump/1", ` + strings.Repeat(`"k": 1, `, 2) + `"y": 0}`,
		`{"schema": "faultline.dump/1", ` + keysJSON(100) + `}`,
	}
	for i, c := range cases {
		for _, rf := range []func(string) ([]byte, error){files, nil} {
			checkNativeFast(t, nativeInput{fmt.Sprintf("case%d.json", i), []byte(c), rf})
		}
	}
	// And through Parse, which detects the format first.
	for i, c := range cases {
		checkParse(t, fmt.Sprintf("case%d.json", i), []byte(c), files)
	}
}

// keysJSON returns n distinct unknown members.
func keysJSON(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"k%d": %d, `, i, i)
	}
	b.WriteString(`"last": 0`)
	return b.String()
}

// checkParse compares Parse with what it gave before the fast path:
// detection, then the precise reader.
func checkParse(t *testing.T, name string, data []byte, files func(string) ([]byte, error)) {
	t.Helper()
	got, err := Parse(data, name, files)
	var want *Dump
	var wantErr error
	if f, ok := Detect(data); ok && f.Name == FormatNative && len(data) <= MaxManifestSize {
		want, wantErr = parseNativePrecise(data, name, files)
	} else {
		return // not the native format: the fast path is not involved
	}
	if !sameError(err, wantErr) || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: Parse gives %v, %v; want %v, %v", name, got, err, want, wantErr)
	}
}

// TestRegByName checks that the fast register and fault names agree with
// unwinders.ParseReg and fault.SCB.Field.
func TestRegByName(t *testing.T) {
	for i := range unwinders.NumRegs {
		name := unwinders.Reg(i).String()
		want, wantOK := unwinders.ParseReg(name)
		got, ok := regByName([]byte(name))
		if got != want || ok != wantOK {
			t.Errorf("regByName(%q) = %v, %v; ParseReg: %v, %v", name, got, ok, want, wantOK)
		}
	}
	for _, name := range []string{"cfsr", "hfsr", "mmfar", "bfar", "CFSR", "vtor", "x"} {
		var a, b fault.SCB
		fa, fb := scbField(&a, []byte(name)), b.Field(name)
		if (fa == nil) != (fb == nil) {
			t.Errorf("scbField(%q) = %v, Field: %v", name, fa, fb)
			continue
		}
		if fa != nil {
			*fa, *fb = fault.Known(1), fault.Known(1)
			if a != b {
				t.Errorf("scbField(%q) is another register than Field's", name)
			}
		}
	}
}

// mutate returns variants of a manifest: members dropped or repeated,
// keys renamed, values replaced by others of every kind, and cuts.
func mutate(data []byte, seed uint64) [][]byte {
	rnd := seed*0x9e3779b97f4a7c15 + 1
	next := func(n int) int {
		rnd ^= rnd << 13
		rnd ^= rnd >> 7
		rnd ^= rnd << 17
		return int(rnd % uint64(n))
	}
	values := []string{`null`, `0`, `-1`, `1.5`, `1e3`, `4294967295`, `4294967296`, `"0x"`, `"0xFFFFFFFF"`,
		`"0x100000000"`, `"0X1f"`, `"0x1g"`, `"\u0030x10"`, `"normal"`, `"exception"`, `"inlined"`, `""`, `[]`, `{}`,
		`true`, `"caf\u00e9"`, "\"\xff\"", `"../x"`, `"/abs"`, `"missing.bin"`, `"00"`, `"0"`, `{"a": 1}`, `[1, 2]`}
	keys := []string{`"PC"`, `" pc"`, `"r13"`, `"S31"`, `"fp"`, `"CFSR"`, `"Schema"`, `"size"`, `"hex"`, `"file"`,
		`"address"`, `"kind"`, `"line"`, `"source"`, `"frames"`, `"stop"`, `"p\u0063"`, `"unknown"`, `"truth"`}
	member := regexp.MustCompile(`(?m)^(\s*)("[^"\n]*")(\s*:\s*)("[^"\n]*"|[-0-9.eE+]+|null|true|false)(,?)$`)
	spans := member.FindAllSubmatchIndex(data, -1)
	var out [][]byte
	edit := func(start, end int, repl string) {
		m := append(append(append([]byte{}, data[:start]...), repl...), data[end:]...)
		out = append(out, m)
	}
	for k := 0; k < 40 && len(spans) > 0; k++ {
		s := spans[next(len(spans))]
		switch next(5) {
		case 0: // another value
			edit(s[8], s[9], values[next(len(values))])
		case 1: // another key
			edit(s[4], s[5], keys[next(len(keys))])
		case 2: // the member twice
			line := string(data[s[0]:s[1]])
			if !strings.HasSuffix(line, ",") {
				line += ","
			}
			edit(s[0], s[0], line+"\n")
		case 3: // the member dropped (a trailing comma may break the JSON)
			edit(s[0], min(s[1]+1, len(data)), "")
		case 4: // a key in upper case
			edit(s[4], s[5], strings.ToUpper(string(data[s[4]:s[5]])))
		}
	}
	// Cuts and single-byte changes.
	for k := 0; k < 8 && len(data) > 1; k++ {
		out = append(out, data[:next(len(data))])
		m := bytes.Clone(data)
		const chars = "{}[],:\"\\ 0x-.enul\x00\xff"
		m[next(len(m))] = chars[next(len(chars))]
		out = append(out, m)
	}
	return out
}

// FuzzNativeFast feeds arbitrary manifests to both readers (see
// checkNativeFast), with region files whose content comes from their
// names, and to both ways of reading ManifestRefs. The corpus is every
// native manifest in fixtures/ and the cases of TestNativeFastCases.
func FuzzNativeFast(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(threadTruthSeed))
	for _, in := range nativeInputs(f) {
		f.Add(in.data)
	}
	for _, tc := range badCases(f) {
		f.Add([]byte(tc.json))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkNativeFast(t, nativeInput{"fuzz.json", data, fuzzFiles})
		checkManifestRefs(t, "fuzz.json", data)
	})
}

// checkManifestRefs compares ManifestRefs with encoding/json.
func checkManifestRefs(t *testing.T, name string, data []byte) {
	t.Helper()
	var m struct {
		Schema *string `json:"schema"`
		Memory []struct {
			File string `json:"file"`
		} `json:"memory"`
	}
	wantErr := json.Unmarshal(data, &m)
	var want []string
	for _, r := range m.Memory {
		if r.File != "" {
			want = append(want, r.File)
		}
	}
	schema, files, err := ManifestRefs(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Errorf("%s: ManifestRefs error %v, encoding/json %v", name, err, wantErr)
	case err != nil:
	case !reflect.DeepEqual(schema, m.Schema) || !slices.Equal(files, want):
		t.Errorf("%s: ManifestRefs = %v %q, encoding/json %v %q", name, ptr(schema), files, ptr(m.Schema), want)
	}
}

func ptr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// TestManifestRefs compares ManifestRefs with encoding/json on every
// fixture, their mutants and hand-made cases.
func TestManifestRefs(t *testing.T) {
	fast := 0
	inputs := nativeInputs(t)
	for i, in := range inputs {
		checkManifestRefs(t, in.name, in.data)
		if _, _, ok := manifestRefsFast(in.data); ok {
			fast++
		} else if !strings.Contains(in.name, "hostile") {
			t.Errorf("%s: a valid fixture misses the fast path of ManifestRefs", in.name)
		}
		if i%5 == 0 {
			for k, m := range mutate(in.data, uint64(i)+7) {
				checkManifestRefs(t, fmt.Sprintf("%s~%d", in.name, k), m)
			}
		}
	}
	for _, c := range []string{
		`{}`, `null`, `[]`, `{"schema": null}`, `{"schema": 1}`, `{"SCHEMA": "x"}`, `{"schema": "a", "schema": "b"}`,
		`{"ſchema": "x"}`, `{"memory": null}`, `{"memory": [null, {"file": "a"}]}`, `{"memory": [{"FILE": "a"}]}`,
		`{"memory": [{"file": null}, {"file": ""}, {"file": "a\/b"}, {"file": "x", "file": "y"}]}`,
		`{"memory": [{"file": 1}]}`, `{"memory": {}}`, `{"memory": [1]}`, `{"memory": [], "Memory": [{"file": "a"}]}`,
		`{"memory": [{"file": "a", "other": {"file": 1}}], "x": [1, {"schema": 2}]}`, `{"schema": "x"} x`,
		"{\"schema\": \"\xff\"}", `{"schema": "\u00e9"}`, `{"schema": "a"`,
	} {
		checkManifestRefs(t, c, []byte(c))
	}
	t.Logf("%d of %d fixtures through the fast path", fast, len(inputs))
}

// A truth with threads (the emulator's switched-out RTOS threads) goes
// through the writer and back unchanged, and names what is missing.
func TestTruthThreadsRoundTrip(t *testing.T) {
	d := &Dump{Format: FormatNative, CPU: "cortex-m4"}
	d.Regs.Set(unwinders.PC, 0x60)
	d.Truth = &Truth{Source: "emulator-shadow-stack", Frames: []TruthFrame{{PC: 0x60, HasPC: true, Function: "HardFault_Handler"}},
		Threads: []ThreadTruth{
			{Frame: 0x20000660, SP: 0x20000680, HasSP: true, Frames: []TruthFrame{{PC: 0xaf8, HasPC: true, Function: "rtk_exit_critical"}, {PC: 0xc3e, HasPC: true, Function: "deep_task"}}},
			{Frame: 0x20000a40, Frames: []TruthFrame{}},
		}}
	var b bytes.Buffer
	if err := d.WriteSelfContained(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"threads": [`) || !strings.Contains(b.String(), `"frame": "0x20000660"`) {
		t.Fatalf("manifest:\n%s", b.String())
	}
	got, err := parseNativePrecise(b.Bytes(), "m.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Truth, d.Truth) {
		t.Errorf("truth read back\n%+v\nwant\n%+v", got.Truth, d.Truth)
	}
	fast, ok := parseNativeFast(b.Bytes(), "m.json", nil, new(readLog))
	if !ok || !reflect.DeepEqual(fast.Truth, d.Truth) {
		t.Errorf("fast path ok=%v truth %+v", ok, fast)
	}
	_, err = parseNativePrecise([]byte(`{"schema": "faultline.dump/1", "registers": {"pc": 1}, "truth": {"source": "x", "frames": [], "threads": [{"frames": []}]}}`), "m.json", nil)
	if err == nil || !strings.Contains(err.Error(), "truth.threads[0].frame") || !strings.Contains(err.Error(), "exception frame") {
		t.Errorf("missing frame: %v", err)
	}
}
