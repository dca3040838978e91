{{/*
Named templates shared by the chart's objects.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "kopf-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name: fullnameOverride, else the release name, followed by the chart
name unless the release name contains it already. Truncated to 63 characters (DNS label).
*/}}
{{- define "kopf-scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The helm.sh/chart label: name and version, with "+" (not allowed in labels) replaced. */}}
{{- define "kopf-scheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the scheduler's pods; they never change after the first install. */}}
{{- define "kopf-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kopf-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end }}

{{/* Labels of every object. */}}
{{- define "kopf-scheduler.labels" -}}
helm.sh/chart: {{ include "kopf-scheduler.chart" . }}
{{ include "kopf-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels of the configuration check's objects: the chart's, except the component, so that the
check's pod is none of the scheduler's pods to the Service, the PodDisruptionBudget or the
anti-affinity.
*/}}
{{- define "kopf-scheduler.configCheckLabels" -}}
helm.sh/chart: {{ include "kopf-scheduler.chart" . }}
app.kubernetes.io/name: {{ include "kopf-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: config-check
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The image reference: repository with the digest if one is set, else with the tag. */}}
{{- define "kopf-scheduler.image" -}}
{{- $image := .Values.scheduler.image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/*
Value combinations that render valid YAML but would run a broken scheduler: fail the install
with one clear line instead.
*/}}
{{- define "kopf-scheduler.validate" -}}
{{- if eq .Values.scheduler.name "kube-scheduler" }}
{{- fail "scheduler.name must not be kube-scheduler: it names the leader-election Lease, and kube-scheduler is the default scheduler's" }}
{{- end }}
{{- if and (gt (int .Values.scheduler.replicaCount) 1) (not .Values.scheduler.leaderElect) }}
{{- fail "scheduler.replicaCount above 1 needs scheduler.leaderElect=true, or every replica binds pods" }}
{{- end }}
{{- $owners := dict "apiVersion" "the chart itself" "kind" "the chart itself" }}
{{- $_ := set $owners "profiles" "the values scheduler.name, plugins, pluginConfig and extraProfiles" }}
{{- $_ := set $owners "leaderElection" "the values scheduler.leaderElect and scheduler.leaderElection" }}
{{- $_ := set $owners "kopfScheduler" "the value kopfScheduler" }}
{{- range $key, $owner := $owners }}
{{- if hasKey $.Values.schedulerConfig $key }}
{{- fail (printf "schedulerConfig.%s comes from %s; remove it from schedulerConfig" $key $owner) }}
{{- end }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if and $pdb.enabled (eq (kindIs "invalid" $pdb.maxUnavailable) (kindIs "invalid" $pdb.minAvailable)) }}
{{- fail "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable (the other to null)" }}
{{- end }}
{{- end }}

{{/* The KubeSchedulerConfiguration, as a YAML document. */}}
{{- define "kopf-scheduler.config" -}}
{{- $profile := dict "schedulerName" .Values.scheduler.name }}
{{- $plugins := deepCopy .Values.plugins.extensionPoints }}
{{- if or .Values.plugins.enabled .Values.plugins.disabled }}
{{- $multiPoint := dict }}
{{- with .Values.plugins.enabled }}
{{- $enabled := list }}
{{- range . }}{{ $enabled = append $enabled (dict "name" .) }}{{ end }}
{{- $_ := set $multiPoint "enabled" $enabled }}
{{- end }}
{{- with .Values.plugins.disabled }}
{{- $disabled := list }}
{{- range . }}{{ $disabled = append $disabled (dict "name" .) }}{{ end }}
{{- $_ := set $multiPoint "disabled" $disabled }}
{{- end }}
{{- $_ := set $plugins "multiPoint" $multiPoint }}
{{- end }}
{{- $pluginConfig := .Values.pluginConfig }}
{{- with .Values.gangScheduling }}
{{- if .enabled }}
{{- /* Coscheduling where scheduler-plugins' manifests enable it, after the user's own plugins. */}}
{{- $coscheduling := dict "name" "Coscheduling" }}
{{- range $point := list "queueSort" "preFilter" "postFilter" "permit" "reserve" }}
{{- $set := get $plugins $point | default (dict) }}
{{- $_ := set $set "enabled" (append ($set.enabled | default (list)) $coscheduling) }}
{{- if eq $point "queueSort" }}
{{- $_ := set $set "disabled" (append ($set.disabled | default (list)) (dict "name" "*")) }}
{{- end }}
{{- $_ := set $plugins $point $set }}
{{- end }}
{{- $own := false }}
{{- range $pluginConfig }}{{ if eq .name "Coscheduling" }}{{ $own = true }}{{ end }}{{ end }}
{{- if not $own }}
{{- $args := dict "permitWaitingTimeSeconds" .permitWaitingTimeSeconds "podGroupBackoffSeconds" .podGroupBackoffSeconds }}
{{- $pluginConfig = append $pluginConfig (dict "name" "Coscheduling" "args" $args) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $plugins }}
{{- $_ := set $profile "plugins" $plugins }}
{{- end }}
{{- with $pluginConfig }}
{{- $_ := set $profile "pluginConfig" . }}
{{- end }}
{{- $election := dict "leaderElect" .Values.scheduler.leaderElect "resourceName" .Values.scheduler.name "resourceNamespace" .Release.Namespace }}
{{- $election = merge $election .Values.scheduler.leaderElection }}
{{- $config := deepCopy .Values.schedulerConfig }}
{{- $_ := set $config "apiVersion" "kubescheduler.config.k8s.io/v1" }}
{{- $_ := set $config "kind" "KubeSchedulerConfiguration" }}
{{- $extraProfiles := list }}
{{- range .Values.extraProfiles }}
{{- $extra := deepCopy . }}
{{- if $.Values.gangScheduling.enabled }}
{{- /* Every profile must sort the one queue alike: Coscheduling's, unless the profile says. */}}
{{- $extraPlugins := get $extra "plugins" | default (dict) }}
{{- if not (hasKey $extraPlugins "queueSort") }}
{{- $_ := set $extraPlugins "queueSort" (dict "enabled" (list (dict "name" "Coscheduling")) "disabled" (list (dict "name" "*"))) }}
{{- $_ := set $extra "plugins" $extraPlugins }}
{{- end }}
{{- end }}
{{- $extraProfiles = append $extraProfiles $extra }}
{{- end }}
{{- $_ := set $config "profiles" (prepend $extraProfiles $profile) }}
{{- $_ := set $config "leaderElection" $election }}
{{- with .Values.kopfScheduler }}
{{- $_ := set $config "kopfScheduler" . }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* The pod affinity: scheduler.affinity, else anti-affinity over nodes by scheduler.podAntiAffinity. */}}
{{- define "kopf-scheduler.affinity" -}}
{{- if .Values.scheduler.affinity }}
{{- toYaml .Values.scheduler.affinity }}
{{- else if ne .Values.scheduler.podAntiAffinity "none" }}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "kopf-scheduler.selectorLabels" . | fromYaml)) }}
{{- $antiAffinity := dict }}
{{- if eq .Values.scheduler.podAntiAffinity "hard" }}
{{- $_ := set $antiAffinity "requiredDuringSchedulingIgnoredDuringExecution" (list $term) }}
{{- else }}
{{- $_ := set $antiAffinity "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term)) }}
{{- end }}
{{- toYaml (dict "podAntiAffinity" $antiAffinity) }}
{{- end }}
{{- end }}

{{/* The topology spread constraints; each without a labelSelector gets the pod selector. */}}
{{- define "kopf-scheduler.topologySpreadConstraints" -}}
{{- $selector := dict "matchLabels" (include "kopf-scheduler.selectorLabels" . | fromYaml) }}
{{- $constraints := list }}
{{- range .Values.scheduler.topologySpreadConstraints }}
{{- $constraint := deepCopy . }}
{{- if not (hasKey $constraint "labelSelector") }}
{{- $_ := set $constraint "labelSelector" $selector }}
{{- end }}
{{- $constraints = append $constraints $constraint }}
{{- end }}
{{- with $constraints }}
{{- toYaml . }}
{{- end }}
{{- end }}
