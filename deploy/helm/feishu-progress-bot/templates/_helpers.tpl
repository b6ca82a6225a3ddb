{{/* Names and labels shared by the chart's objects. */}}
{{- define "feishu-progress-bot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "feishu-progress-bot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "feishu-progress-bot.labels" -}}
{{ include "feishu-progress-bot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "feishu-progress-bot.secretName" -}}
{{- default (include "feishu-progress-bot.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/*
One instance per DATA_DIR: the bot keeps its state in SQLite and locks DATA_DIR, so a second replica on the
same volume exits at start, and one on a volume of its own would be a second bot with its own questions and
cards. replicaCount > 1 needs databaseUrl (DATABASE_URL): several instances on one Postgres serve one app
(docs/several-instances.md), each with a DATA_DIR of its own.
*/}}
{{- define "feishu-progress-bot.guards" -}}
{{- if gt (int .Values.replicaCount) 1 -}}
{{- if not .Values.databaseUrl -}}
{{- fail (printf "replicaCount is %d, but more than 1 needs databaseUrl (DATABASE_URL): without Postgres every replica is a separate bot on its own SQLite, and the bot locks DATA_DIR. Keep replicaCount: 1, or set databaseUrl." (int .Values.replicaCount)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
