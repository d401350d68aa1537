// Package layout holds no code, only a test: it checks every package's imports
// against the "must not import" column of the Packages table in
// docs/ARCHITECTURE.md, so the documented layering cannot silently drift from
// the code.
//
// The test runs `go list -json ./...` once at the module root and fails when a
// package depends (directly or through others, non-test code) on a path its row
// forbids, when anything imports a command under cmd/, when the table names a
// package the module no longer has, or when a package of the module is missing
// from the table.
package layout
