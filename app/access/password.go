package access

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
)

// equalConst compares in constant time, lengths included (by hashing first).
func equalConst(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// GeneratePassword returns 20 characters from an unambiguous alphabet.
func GeneratePassword() string { return generatePassword() }

func generatePassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
