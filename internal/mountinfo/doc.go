// Package mountinfo reads the mount table of /proc/PID/mountinfo
// (proc(5)): each line "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS", paths with octal escapes
// (\040 for a space).
//
// Parse never fails: a line that is not of that form is skipped.
package mountinfo
