#!/usr/bin/env bash
# Applies the recipe in order: namespace, volume, config, vLLM (waits until it serves),
# the shard Job (waits until every index completed), then the merge Job.
#   deploy/kubernetes/run.sh          (kubectl pointed at your cluster; Secret created)
set -euo pipefail
cd "$(dirname "$0")"
kubectl apply -f 00-namespace.yaml -f pvc.yaml -f configmap.yaml -f vllm.yaml
kubectl -n gauntlet get secret gauntlet-api-keys >/dev/null 2>&1 || kubectl apply -f secret.yaml
kubectl -n gauntlet rollout status deployment/vllm --timeout=30m
kubectl apply -f shards-job.yaml
kubectl -n gauntlet wait --for=condition=complete job/gauntlet-shards --timeout=24h
kubectl apply -f merge-job.yaml
kubectl -n gauntlet wait --for=condition=complete job/gauntlet-merge --timeout=1h
echo "merged: /runs/merged/vllm-jailbreak on the gauntlet-runs volume"
