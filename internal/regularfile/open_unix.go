//go:build unix

package regularfile

import (
	"os"
	"syscall"
)

// openFlags opens without blocking: opening a FIFO that has no writer returns at once.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
