package exactfs

import (
	"errors"
	"testing"
)

func TestACLLayoutClassifier(t *testing.T) {
	// The kernel validates ACL xattrs on write, so a malformed one cannot be
	// planted on a real file; the classifier behind acl_malformed is checked
	// directly.
	if wellFormedACL([]byte{1, 0, 0, 0}) || wellFormedACL([]byte{2, 0, 0, 0, 1}) || !wellFormedACL([]byte{2, 0, 0, 0}) {
		t.Fatal("wellFormedACL misclassifies")
	}
}

// An ACL failure's step is a cause reached with errors.As, the outcome stays
// the *Error's code, and the message still names the step.
func TestACLErrorCause(t *testing.T) {
	err := aclErr("verify", "/p", CodeACLPresent, ACLQuery, ACLDefault, "an ACL is present", errors.New("boom"))
	var acl *ACLError
	if !errors.As(err, &acl) || acl.Operation != ACLQuery || acl.Attribute != ACLDefault || acl.Err == nil {
		t.Fatalf("cause %+v of %v", acl, err)
	}
	if !errors.Is(err, Sentinel(CodeACLPresent)) || CodeOf(err) != CodeACLPresent {
		t.Fatalf("outcome of %v", err)
	}
	if want := "verify /p: an ACL is present: acl query of the default attribute: boom (acl_present)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
}
