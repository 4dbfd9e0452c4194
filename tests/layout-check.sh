#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# layout-check.sh -- the module dependencies of docs/ARCHITECTURE.md, held
# by the tree itself: which folder's files may include which folder's
# headers, that the tools see only the public header and the admin
# interface, and that the allocator calls nothing in commit or write-back.
# A change that breaks one fails here, naming the file and the include.
set -u
top=${WC_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
. "$top/tests/tap.sh"
cd "$top" || bail "no source tree at $top"

# includes FILE...: every quoted include, as "file<TAB>header".
includes() {
	grep -H -o '^#include "[^"]*"' "$@" 2>/dev/null | sed 's/:#include "/\t/; s/"$//'
}

# allowed MODULE PATTERN: each lib/MODULE file's quoted includes must match
# the extended regex PATTERN.
allowed() {
	local module=$1 pattern=$2 bad
	bad=$(includes lib/"$module"/*.[ch] lib/"$module"/*/*.[ch] | awk -F'\t' -v re="^($pattern)\$" '$2 !~ re')
	if [ -z "$bad" ]; then ok "lib/$module includes only ${pattern//|/, }"; else
		not_ok "lib/$module includes outside ${pattern//|/, }"; echo "$bad" | sed 's/^/#   /'; fi
}

own='config.h|wcache.h'
allowed util "util/[a-z_0-9]+\.h|$own"
allowed flush "util/[a-z_0-9]+\.h|flush/[a-z_0-9/]+\.h|$own"
allowed origin "util/[a-z_0-9]+\.h|origin/[a-z_0-9]+\.h|$own"
allowed core "util/[a-z_0-9]+\.h|flush/flush\.h|flush/engine\.h|origin/[a-z_0-9]+\.h|core/[a-z_0-9]+\.h|$own"
allowed writeback "util/[a-z_0-9]+\.h|flush/flush\.h|origin/origin\.h|core/[a-z_0-9]+\.h|writeback/[a-z_0-9]+\.h|$own"
allowed admin "util/[a-z_0-9]+\.h|flush/[a-z_0-9]+\.h|origin/[a-z_0-9]+\.h|core/[a-z_0-9]+\.h|block/format\.h|admin/[a-z_0-9]+\.h|$own"
allowed block "util/[a-z_0-9]+\.h|origin/origin\.h|core/[a-z_0-9]+\.h|writeback/writeback\.h|block/[a-z_0-9]+\.h|$own"
allowed api "util/[a-z_0-9]+\.h|flush/[a-z_0-9]+\.h|origin/[a-z_0-9]+\.h|core/[a-z_0-9]+\.h|writeback/writeback\.h|block/block\.h|api/[a-z_0-9]+\.h|abi\.h|$own"

# The admin interface stands alone: the tools build against it with no
# library folder on their include path.
bad=$(includes lib/admin/wcadmin.h | awk -F'\t' '$2 != "wcache.h"')
if [ -z "$bad" ]; then ok "lib/admin/wcadmin.h includes only wcache.h"; else
	not_ok "lib/admin/wcadmin.h includes library headers"; echo "$bad" | sed 's/^/#   /'; fi

# Only the public header's glue lives at lib/'s top; the rest in modules.
stray=$(ls lib/*.c 2>/dev/null | grep -v '^lib/abi\.c$')
if [ -z "$stray" ]; then ok "no .c file in lib/ outside a module but abi.c"; else
	not_ok "lib/ has .c files outside a module"; echo "$stray" | sed 's/^/#   /'; fi

# Write-back's internals stay inside writeback/.
leak=$(grep -l '"writeback/internal\.h"' lib/*/*.c lib/*/*.h | grep -v '^lib/writeback/')
if [ -z "$leak" ]; then ok "writeback/internal.h is included only by writeback/"; else
	not_ok "writeback/internal.h included outside writeback/"; echo "$leak" | sed 's/^/#   /'; fi

# The allocator pops, pushes and waits: reclaiming is api/reclaim.c's.
calls=$(grep -n -E '\bwc_(commit|commit_published|release_freed|writeback_[a-z_]+|versions_drop|lock_for_drop)\(' lib/core/alloc.c)
if [ -z "$calls" ]; then ok "core/alloc.c calls nothing in commit or write-back"; else
	not_ok "core/alloc.c calls commit or write-back"; echo "$calls" | sed 's/^/#   /'; fi

# The tools: the public header, the admin interface, their own headers.
tool_headers=$(ls tools/*/*.h | xargs -n1 basename | paste -sd'|' | sed 's/\./\\./g')
bad=$(includes tools/*/*.[ch] | awk -F'\t' -v re="^(wcache\\.h|wcadmin\\.h|$tool_headers)\$" '$2 !~ re')
if [ -z "$bad" ]; then ok "tools/ include only wcache.h, wcadmin.h and their own headers"; else
	not_ok "tools/ include library internals"; echo "$bad" | sed 's/^/#   /'; fi

# The fio engine and the nbdkit plugin: the public header and the tools'
# shared helpers, plus their hosts' headers.
bad=$(includes fio/*.c nbdkit/*.c | awk -F'\t' '$2 !~ /^(wcache\.h|wctools\.h|config\.h|fio\.h|optgroup\.h)$/')
if [ -z "$bad" ]; then ok "fio/ and nbdkit/ include only the public header"; else
	not_ok "fio/ or nbdkit/ include library internals"; echo "$bad" | sed 's/^/#   /'; fi

finish
