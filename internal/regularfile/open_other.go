//go:build !unix

package regularfile

import "os"

// openFlags: elsewhere there are no FIFOs to block an open.
const openFlags = os.O_RDONLY
