package regress

import (
	"encoding/json"
	"testing"
)

// A spec may expect a frame's arguments: every named one must have the
// value analyze prints.
func TestFrameExpectArgs(t *testing.T) {
	f, err := parseFrame(json.RawMessage(`{"function": "udf_check", "args": {"v": "11"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := f.String(); s != "udf_check (v=11)" {
		t.Errorf("String: %q", s)
	}
	for _, tc := range []struct {
		args map[string]string
		want bool
	}{
		{map[string]string{"v": "11"}, true},
		{map[string]string{"v": "11", "w": "2"}, true},
		{map[string]string{"v": "12"}, false},
		{map[string]string{"v": "<optimized out>"}, false},
		{nil, false},
	} {
		if got := f.Match(Frame{Function: "udf_check", Args: tc.args}); got != tc.want {
			t.Errorf("args %v: match %v, want %v", tc.args, got, tc.want)
		}
	}
	if _, err := parseFrame(json.RawMessage(`{"function": "f", "args": {"v": 3}}`)); err == nil {
		t.Error("a number as an argument's value accepted: values are analyze's text")
	}
	r := argsOf(nil)
	if r != nil {
		t.Errorf("argsOf(nil) = %v", r)
	}
}
