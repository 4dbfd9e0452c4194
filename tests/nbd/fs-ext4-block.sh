#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fs.sh with the cache on the block medium (a file under /var/tmp).
WC_NBD_MEDIUM=block exec "$(dirname "$0")/fs.sh" ext4 "$@"
