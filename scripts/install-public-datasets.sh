#!/usr/bin/env bash
# Downloads the published files of the public sets whose pins the real-file test checks
# (crates/redteam/tests/public_datasets_real.rs) into a content-addressed directory, one
# file per sha256 (the layout of gauntlet's dataset cache, so a loader finds each file by
# its pin with no network), and prints the directory:
#   - ailuminate: MLCommons AILuminate v1.0 demo prompts, en_us and fr_fr (CC-BY-4.0);
#   - simple_safety_tests: SimpleSafetyTests (CC-BY-4.0);
#   - cyberseceval_frr: CyberSecEval mitre_frr, English and machine-translated (MIT);
#   - cyberseceval_interpreter: CyberSecEval interpreter (MIT).
# The files hold prompts that ask for harmful content; they are test data, kept out of
# the repository and fetched here by pin.
#
#   scripts/install-public-datasets.sh [DIR]
#
# DIR defaults to $XDG_CACHE_HOME/gauntlet/public-datasets (else ~/.cache/…); a file
# already there with the right sha256 is kept. Exit 1, saying which file and why, when a
# download fails or a file's sha256 is not its pin.
set -euo pipefail
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet/public-datasets}
fail() { echo "install-public-datasets: $*" >&2; exit 1; }
command -v curl >/dev/null || fail "curl is needed"
mkdir -p "$DIR"
# sha256 and URL, one file a line (the URLs and pins of the loaders' constants).
FILES="
63e2b654325c5405096fabf28ef5f057b0ad674904b1839fd1f52b523e324d02 https://raw.githubusercontent.com/mlcommons/ailuminate/d7c115ec83a7e3c447eade38f6120f84cbccb674/airr_official_1.0_demo_en_us_prompt_set_release.csv
5f26484aca585ed690f6da61230e214069778fed43bc2c735d30b4df29f1fe1c https://raw.githubusercontent.com/mlcommons/ailuminate/27b2e7fcce03cfd11642868def432d5f9bec32bd/airr_official_1.0_demo_fr_fr_prompt_set_release.csv
6d95a1301e0d0f3a3c4cf5392f4afff11ad6e3066f95d23aaa138d44aedf986c https://raw.githubusercontent.com/bertiev/SimpleSafetyTests/d7aee9a9422a5a5488f478fd79c2479c891c0f3b/SimpleSafetyTests%20-%20test%20cases.csv
7a9b400bdf5ddbb36d5e7c3e8f6b5adb5d13125b8d03be66fd252a0f20b79d15 https://raw.githubusercontent.com/meta-llama/PurpleLlama/76d0bfa0f31c14049da2e350e2f4a3e17fafcaa2/CybersecurityBenchmarks/datasets/mitre_frr/mitre_frr.json
93295d6ac348d939be3d5dbbcf8f4ac3b3f8f755d822cee0da8c292e9ebbfcff https://raw.githubusercontent.com/meta-llama/PurpleLlama/76d0bfa0f31c14049da2e350e2f4a3e17fafcaa2/CybersecurityBenchmarks/datasets/mitre_frr/frr_multilingual_machine_translated.json
1d3e7cd4dd94a436d96b6e689c13e4f3edf5418d680d0b485a3ea8bf4664840c https://raw.githubusercontent.com/meta-llama/PurpleLlama/07fc92bd60597eb885b4109acda546c9f1090ac8/CybersecurityBenchmarks/datasets/interpreter/interpreter.json
"
have() { [[ -f "$DIR/$1" ]] && [[ "$(sha256sum "$DIR/$1" | cut -d' ' -f1)" == "$1" ]]; }
while read -r sha url; do
  [[ -n "$sha" ]] || continue
  have "$sha" && continue
  tmp="$DIR/.part-$sha"
  curl -fsSL --retry 3 --max-time 120 -o "$tmp" "$url" || { rm -f "$tmp"; fail "download failed: $url"; }
  got=$(sha256sum "$tmp" | cut -d' ' -f1)
  if [[ "$got" != "$sha" ]]; then
    rm -f "$tmp"
    fail "$url has sha256 $got, expected its pin $sha"
  fi
  mv "$tmp" "$DIR/$sha"
done <<<"$FILES"
echo "$DIR"
