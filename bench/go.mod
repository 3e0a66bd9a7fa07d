module github.com/exactfs/exactfs/bench

go 1.26.0

require (
	github.com/exactfs/exactfs v0.0.0
	github.com/gofrs/flock v0.13.2
	golang.org/x/sys v0.49.0
)

replace github.com/exactfs/exactfs => ../
