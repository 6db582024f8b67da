{{- define "tracejudge.labels" -}}
app.kubernetes.io/name: tracejudge
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
