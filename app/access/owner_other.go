//go:build !unix

package access

import "os"

// ownedByMe cannot tell owners apart here: the directory's mode protects it.
func ownedByMe(os.FileInfo) bool { return true }

func ownerOf(os.FileInfo) int { return -1 }
