#!/bin/sh
# build.sh NS3_SITE OUT: builds bulk.cc (beside this file) into OUT against
# ns-3's release build from PyPI: NS3_SITE is the site-packages/ns3 folder
# of `pip install ns3==3.44.post0` (in a venv). A binary already at OUT
# is reused. Runs under nice.
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 NS3_SITE OUT" >&2
	exit 2
fi
[ -f "$2" ] && exit 0
here=$(cd "$(dirname "$0")" && pwd)
site=$(cd "$1" && pwd)
libs=$(for f in "$site"/lib64/libns3*.so; do b=$(basename "$f" .so); printf ' -l%s' "${b#lib}"; done)
nice -n 10 c++ -O2 -std=c++20 -o "$2" "$here/bulk.cc" -I"$site/include" -L"$site/lib64" -Wl,-rpath,"$site/lib64" $libs
