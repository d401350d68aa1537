module github.com/partopt/partopt

go 1.26.0

require (
	github.com/spf13/cobra v1.10.2
	github.com/ulikunitz/xz v0.5.17
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/image v0.47.0
	golang.org/x/term v0.47.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
