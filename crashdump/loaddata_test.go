package crashdump

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// LoadOptions.Data: the bytes a caller already read decode to the dump
// reading the file gives, under the same per-dump limit.
func TestLoadWithData(t *testing.T) {
	for _, p := range []string{
		filepath.Join("..", "fixtures", "qemu", "gcc-m3-O2-udf.json"),
		filepath.Join("..", "fixtures", "rtos", "freertos", "gcc-m4f-O2.json"),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := LoadWith(p, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := LoadWith(p, LoadOptions{Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Regs, want.Regs) || !reflect.DeepEqual(got.Memory, want.Memory) ||
			!reflect.DeepEqual(got.Fault, want.Fault) || !reflect.DeepEqual(got.Truth, want.Truth) ||
			got.CPU != want.CPU || got.Path != want.Path || !reflect.DeepEqual(got.Warnings, want.Warnings) {
			t.Errorf("%s: the dump decoded from Data differs from the one read", p)
		}
		limit := int64(len(data))*DecodeFactor - 1
		_, err1 := LoadWith(p, LoadOptions{MaxMemory: limit})
		_, err2 := LoadWith(p, LoadOptions{MaxMemory: limit, Data: data})
		if !errors.Is(err1, ErrTooLarge) || err2 == nil || err1.Error() != err2.Error() {
			t.Errorf("%s: over the limit: %v / with Data: %v", p, err1, err2)
		}
	}
}
