module github.com/exactfs/exactfs/faults

go 1.25.0

require (
	github.com/exactfs/exactfs v0.0.0
	github.com/hanwen/go-fuse/v2 v2.12.1
)

require golang.org/x/sys v0.45.0 // indirect

replace github.com/exactfs/exactfs => ../
