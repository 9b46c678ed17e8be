{{/*
Expand the name of the chart.
*/}}
{{- define "webapp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Create a default fully qualified app name, truncated at 63 characters because some Kubernetes
name fields are limited to that (DNS naming spec). If the release name contains the chart name
it is used as the full name.
*/}}
{{- define "webapp.fullname" -}}
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

{{/*
Create chart name and version as used by the chart label.
*/}}
{{- define "webapp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The version label: the image tag (what actually runs), else the chart's appVersion. Cut to a
valid label value: at most 63 characters, ending in an alphanumeric.
*/}}
{{- define "webapp.version" -}}
{{- $ref := .Values.image | splitList "@" | first }}
{{- $last := $ref | splitList "/" | last }}
{{- $version := .Chart.AppVersion }}
{{- if contains ":" $last }}
{{- $version = $last | splitList ":" | last }}
{{- end }}
{{- regexReplaceAll "[^A-Za-z0-9]+$" ($version | trunc 63) "" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "webapp.labels" -}}
helm.sh/chart: {{ include "webapp.chart" . }}
{{ include "webapp.selectorLabels" . }}
{{- with include "webapp.version" . }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels: name and instance only, so they never change on upgrade (a Deployment's
selector is immutable).
*/}}
{{- define "webapp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webapp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Pod template labels: the common labels plus the component, which the operator's pods carry too.
*/}}
{{- define "webapp.podLabels" -}}
{{ include "webapp.labels" . }}
app.kubernetes.io/component: web
{{- end }}

{{/*
The action both probes run against the "http" port.
*/}}
{{- define "webapp.probeAction" -}}
{{- if eq .Values.probes.type "httpGet" -}}
httpGet:
  path: {{ .Values.probes.path | quote }}
  port: http
{{- else -}}
tcpSocket:
  port: http
{{- end }}
{{- end }}
