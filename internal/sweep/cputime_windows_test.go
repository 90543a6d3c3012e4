//go:build windows

package sweep

import "time"

// cpuTime is not measured on Windows (no getrusage): the benchmark reports 0.
func cpuTime() time.Duration { return 0 }
