module github.com/exactfs/exactfs

go 1.25

require golang.org/x/sys v0.50.0 // indirect
