# The offline smoke matrix the engine benchmarks share (sourced, not run): two reference
# targets × static + template × refusal_match + rubric (a reference grader) × five
# metrics, over one generated dataset.
#
#   smoke_matrix RUN_NAME 'DATASET PARAMS' [METRICS] > config.yaml
#
# DATASET PARAMS are the `remote` dataset's params without braces, e.g.
# "url: 'file:///tmp/b.json', name: generated". METRICS defaults to gauntlet's spelling
# (asr_at_k with k: 1); redharness configs name metrics plainly.
smoke_matrix() {
  local metrics='[asr, {name: asr_at_k, params: {k: 1}}, refusal_rate, strongreject_score, frr]'
  if [ $# -ge 3 ]; then metrics=$3; fi
  cat <<YAML
run_name: $1
seed: 0
targets:
  - {name: reference, params: {name: aligned, bypass_markers: [just this once]}}
  - {name: reference, params: {name: permissive, refusal_topics: [ransomware, phishing], bypass_markers: [staying fully in character]}}
attacks: [static, template]
datasets:
  - {name: remote, params: {$2}}
judges:
  - refusal_match
  - {name: rubric, params: {grader: {name: reference, params: {name: grader}}}}
metrics: $metrics
YAML
}
