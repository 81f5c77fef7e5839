// Package cloudlab holds the two-host testbed's profiles: profile.py, the
// CloudLab profile (geni-lib), mpq.ns, the equivalent Emulab NS file, and
// setup.sh, the nodes' startup script. Its tests render the profile with
// geni-lib and check the topology; there is no Go code.
package cloudlab
