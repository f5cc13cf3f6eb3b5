// Package fleet is faultline's crash server (`faultline serve`, design.md
// "Fleet server"): devices and CI jobs upload firmware ELFs and crash
// dumps over HTTP, workers decode the dumps with the analysis engine and
// group them into signature buckets, and the API and the web pages read
// the results.
//
// The pieces live in sub-packages, each usable on its own:
//
//   - fleet/store: the Store interface (symbols, dumps, buckets and the
//     durable job queue) that every database backend implements, and
//     fleet/store/storetest, the conformance suite each backend runs;
//   - fleet/store/sqlite: the embedded default backend;
//   - fleet/blobs: the content-addressed files (ELFs and dumps) under
//     the --data directory;
//   - fleet/worker: the decoding workers (claim a job, decode with the
//     analysis engine, complete);
//   - fleet/server: the HTTP API (/api/v1/...); every other path goes
//     to the handler in its Pages field;
//   - fleet/web: the web pages (/, /buckets/{signature}, /dumps/{id},
//     /symbols), server-rendered over the store's read side, the
//     handler Open puts in Pages.
//
// The database is the only coordinator: the queue lives in it, so any
// number of worker processes sharing a database share the work, and a
// process killed at any moment loses no upload (the upload and its job
// are one transaction) and leaves no dump half-decoded (a claimed job
// whose worker died is claimed again once its lease expires).
package fleet
