//go:build windows

package safefile

// noFollow is 0 on Windows, which has no O_NOFOLLOW: create opens with O_EXCL (CREATE_NEW),
// which fails on any name that exists, a link included, so a link is not followed there either.
const noFollow = 0
