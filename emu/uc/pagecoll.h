// The store fast path for Debian's libunicorn 2.0.x. In 2.0.1 every guest
// store into a RAM page that holds translated code (on Cortex-M: all SRAM
// the firmware runs from or near, and the flash) takes the not-dirty slow
// path, which builds and frees a page collection (page_collection_lock /
// page_collection_unlock in translate-all.c) around the check for
// self-modifying code: about 70 ns per store. pagecoll.c provides that pair
// from faultline's own executable, doing what Unicorn does after 2.0.1 (no
// collection) when the loaded library is 2.0, and forwarding to the
// library otherwise. The check for self-modifying code itself is untouched.
#ifndef FAULTLINE_UC_PAGECOLL_H
#define FAULTLINE_UC_PAGECOLL_H

#include <stdint.h>

// fl_pagecoll_setup is called by fl_uc_load once the library lib (a dlopen
// handle) is accepted, with the version it reports.
void fl_pagecoll_setup(void *lib, unsigned major, unsigned minor);

// fl_pagecoll_skipping reports whether the library's page collections are
// skipped (the library is 2.0).
int fl_pagecoll_skipping(void);

// fl_pagecoll_called reports whether libunicorn has called our
// page_collection_lock_arm at least once: the interposition works.
int fl_pagecoll_called(void);

#endif
