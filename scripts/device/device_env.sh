# The common start of the device scripts; source it after `set -uo pipefail`:
#   source "$(dirname "$0")/device_env.sh"
# root is the repository and the working directory; $OUT (default /tmp/out) exists; NCCL, torch and
# NVSHMEM keep NVLink multicast off (the device machines' KINDS.md); the GPU tests find their data
# and the orochi binary in gpu-dist/.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OROCHI_TEST_DATA_DIR="$root/tests/data" OROCHI_BINARY="$root/gpu-dist/orochi"
export LD_LIBRARY_PATH="$root/gpu-dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
