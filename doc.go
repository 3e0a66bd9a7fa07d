// Package exactfs provides filesystem primitives whose every removal or
// replacement is bound to an identity proved on the object itself.
package exactfs
