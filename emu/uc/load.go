//go:build cgo

package uc

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "ucapi.h"
*/
import "C"

import (
	"strings"
	"sync"
	"unsafe"
)

const unavailableText = "emulation unavailable: libunicorn.so.2 could not be loaded (apt-get install libunicorn2)"

// libNames lists the shared objects tried, in order, separated by ':': the
// runtime library of Debian's libunicorn2, then the development symlink.
// It is a variable only so that a test can link a faultline that cannot
// find libunicorn (go build -ldflags "-X <this package>.libNames=...");
// nothing else sets it.
var libNames = "libunicorn.so.2:libunicorn.so"

var loadOnce = sync.OnceValue(func() error {
	if err := loadFirst(strings.Split(libNames, ":")); err != nil {
		return err // a *LoadError, not a nil one in an error
	}
	return nil
})

// Available loads libunicorn on its first call (dlopen, then dlsym of every
// function the binding uses, and a check that it is Unicorn 2.x) and returns
// nil if emulation is possible. Otherwise it returns a *LoadError, which
// wraps ErrUnavailable; the outcome of the first call is kept for the life
// of the process. Open calls it; it is safe for concurrent use.
//
// faultline does not link libunicorn: relocating the 19 MB library cost
// every process start about 6 ms, and most commands never emulate.
func Available() error { return loadOnce() }

// loadFirst tries each name in turn. A library that is not found lets the next
// name be tried; one that is found but unusable (a missing function, not
// 2.x) is the answer. With no name found, the error is the first name's.
func loadFirst(names []string) *LoadError {
	var first *LoadError
	for _, name := range names {
		err := loadLib(name)
		if err == nil {
			return nil
		}
		if err.Symbol != "" || err.Version != "" {
			return err
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = &LoadError{Detail: "no libunicorn name to load"}
	}
	return first
}

// loadLib loads one library into the table the C code calls through
// (ucapi.h). On failure the table is left as it was.
func loadLib(name string) *LoadError {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [512]C.char
	rc := C.fl_uc_load(cname, &buf[0], C.size_t(len(buf)))
	msg := C.GoString(&buf[0])
	switch rc {
	case C.FL_UC_OK:
		return nil
	case C.FL_UC_NOSYM:
		return &LoadError{Lib: name, Symbol: msg, Detail: name + ": undefined symbol " + msg}
	case C.FL_UC_VERSION:
		return &LoadError{Lib: name, Version: msg, Detail: name + " is Unicorn " + msg + ", not 2.x"}
	}
	if msg == "" {
		msg = name + ": cannot be loaded"
	}
	return &LoadError{Lib: name, Detail: msg}
}
