module github.com/exactfs/exactfs/chaos

go 1.25.0

require github.com/exactfs/exactfs v0.0.0

require (
	github.com/anishathalye/porcupine v1.3.1
	golang.org/x/sys v0.45.0 // indirect
)

replace github.com/exactfs/exactfs => ../
