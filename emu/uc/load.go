//go:build cgo

package uc

/*
// --export-dynamic puts the executable's C functions in its dynamic symbol
// table, so that libunicorn, loaded later, binds its PLT calls of
// page_collection_lock_arm/page_collection_unlock_arm to pagecoll.c's
// (TestStoreFastPath checks it). It adds about 200 symbols: Go's own are not
// exported.
#cgo LDFLAGS: -ldl -Wl,--export-dynamic
#include <stdlib.h>
#include "ucapi.h"
#include "pagecoll.h"
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

// StorePath describes how guest stores reach libunicorn's check for
// self-modifying code (pagecoll.h).
type StorePath struct {
	// Skipping: the loaded library is Unicorn 2.0, whose page collections
	// around that check are skipped (what Unicorn does after 2.0.1).
	Skipping bool
	// Interposed: libunicorn has called faultline's page_collection_lock_arm
	// at least once, so the executable's definitions are the ones in use
	// (it needs an emulation that stored to a page holding code).
	Interposed bool
}

// Stores reports the store path once libunicorn is loaded.
func Stores() StorePath {
	return StorePath{Skipping: C.fl_pagecoll_skipping() != 0, Interposed: C.fl_pagecoll_called() != 0}
}

// Version returns the major and minor version the loaded libunicorn reports
// (uc_version), or 0, 0 when it cannot be loaded.
func Version() (major, minor uint) {
	if Available() != nil {
		return 0, 0
	}
	var ma, mi C.uint
	C.uc_version(&ma, &mi)
	return uint(ma), uint(mi)
}
