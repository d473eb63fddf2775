//go:build !unix

package app_test

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
