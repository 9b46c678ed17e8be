{{/*
Expand the name of the chart.
*/}}
{{- define "webapp-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
A fully qualified app name, truncated so that "-webhook-tls" still fits in 63 characters.
*/}}
{{- define "webapp-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "webapp-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "webapp-operator.labels" -}}
helm.sh/chart: {{ include "webapp-operator.chart" . }}
app.kubernetes.io/name: {{ include "webapp-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels of one component (manager or webhook): name, instance, component only.
*/}}
{{- define "webapp-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webapp-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The manager's identity, and the webhook's own (it must not carry the manager's permissions).
*/}}
{{- define "webapp-operator.serviceAccountName" -}}
{{- include "webapp-operator.fullname" . }}
{{- end }}

{{- define "webapp-operator.webhookServiceAccountName" -}}
{{- printf "%s-webhook" (include "webapp-operator.fullname" .) }}
{{- end }}

{{- define "webapp-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "webapp-operator.webhookService" -}}
{{- printf "%s-webhook" (include "webapp-operator.fullname" .) }}
{{- end }}

{{- define "webapp-operator.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "webapp-operator.fullname" .) }}
{{- end }}

{{/*
The operator's watch scope.
*/}}
{{- define "webapp-operator.scopeArgs" -}}
{{- if .Values.watchNamespaces }}
{{- range .Values.watchNamespaces }}
- --namespace={{ . }}
{{- end }}
{{- else }}
- --all-namespaces
{{- end }}
{{- end }}
