#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
exec "$(dirname "$0")/fs.sh" ext4 "$@"
