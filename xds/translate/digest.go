/*
Copyright The shardgate Authors.
*/

package translate

import (
	"crypto/sha256"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Digest identifies a resource's content: the SHA-256 of its deterministic
// serialization.
type Digest [sha256.Size]byte

// DigestOf computes a resource's digest: the SHA-256 of its deterministic
// serialization (of a wire form, of what is sent).
func DigestOf(m proto.Message) (Digest, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return Digest{}, fmt.Errorf("serialize: %w", err)
	}
	return sha256.Sum256(b), nil
}
