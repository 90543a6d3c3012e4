package reportfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// checkReportFile refuses files of /proc and /sys: some of them accept a write (and then do
// something else with it than keep a report).
func checkReportFile(f *os.File) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return nil
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC:
		return errors.New("a file of /proc or /sys cannot hold a report")
	}
	return nil
}
