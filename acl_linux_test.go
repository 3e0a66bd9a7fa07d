package exactfs

import "testing"

func TestACLLayoutClassifier(t *testing.T) {
	// The kernel validates ACL xattrs on write, so a malformed one cannot be
	// planted on a real file; the classifier behind acl_malformed is checked
	// directly.
	if wellFormedACL([]byte{1, 0, 0, 0}) || wellFormedACL([]byte{2, 0, 0, 0, 1}) || !wellFormedACL([]byte{2, 0, 0, 0}) {
		t.Fatal("wellFormedACL misclassifies")
	}
}
