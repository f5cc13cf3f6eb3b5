package crashdump

import (
	"encoding/json"
	"strings"
)

// ManifestRefs reads the "schema" of a JSON document and the "file" of
// each entry of its "memory" array as encoding/json decodes them into
//
//	struct {
//		Schema *string `json:"schema"`
//		Memory []struct{ File string `json:"file"` } `json:"memory"`
//	}
//
// (keys matched without regard to case, the last of repeated keys
// winning, every other key ignored), without decoding the rest: what a
// search of a directory needs to tell manifests from other JSON, and the
// region files they name from dumps. schema is nil when the document has
// none; files holds the non-empty "file" values in order. The error is
// encoding/json's, for a document that does not decode so.
//
// It scans the document once; documents that are not plain (repeated or
// case-folded keys, keys with escapes or outside ASCII, values of other
// types) go through encoding/json itself.
func ManifestRefs(data []byte) (schema *string, files []string, err error) {
	if schema, files, ok := manifestRefsFast(data); ok {
		return schema, files, nil
	}
	var m struct {
		Schema *string `json:"schema"`
		Memory []struct {
			File string `json:"file"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, nil, err
	}
	for _, r := range m.Memory {
		if r.File != "" {
			files = append(files, r.File)
		}
	}
	return m.Schema, files, nil
}

// manifestRefsFast is ManifestRefs for plain documents; ok is false when
// it leaves the document to encoding/json.
func manifestRefsFast(data []byte) (schema *string, files []string, ok bool) {
	s := fastScanner{data: data}
	if s.peek() != '{' {
		return nil, nil, false
	}
	var haveSchema, haveMemory bool
	ok = s.object(nil, func(key []byte) bool {
		switch string(key) {
		case "schema":
			if haveSchema {
				return false
			}
			haveSchema = true
			if s.peek() == 'n' {
				return s.literal("null")
			}
			v, ok := s.stringValue()
			schema = &v
			return ok
		case "memory":
			if haveMemory {
				return false
			}
			haveMemory = true
			if s.peek() == 'n' {
				return s.literal("null")
			}
			return s.array(func(int) bool {
				var haveFile bool
				return s.peek() == '{' && s.object(nil, func(key []byte) bool {
					switch {
					case string(key) == "file":
						if haveFile {
							return false
						}
						haveFile = true
						v, ok := s.optString()
						if v != "" {
							files = append(files, v)
						}
						return ok
					case strings.EqualFold(string(key), "file"):
						return false
					}
					return s.skip(0)
				})
			})
		}
		if strings.EqualFold(string(key), "schema") || strings.EqualFold(string(key), "memory") {
			return false
		}
		return s.skip(0)
	})
	if s.peek(); !ok || s.pos != len(data) {
		return nil, nil, false
	}
	return schema, files, true
}
