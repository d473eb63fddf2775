//go:build !unix

package access_test

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
