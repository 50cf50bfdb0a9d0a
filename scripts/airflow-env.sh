# Airflow for this checkout — source it:  source scripts/airflow-env.sh
#   AIRFLOW_HOME=.airflow/ (SQLite metadata DB), the repository's dags/ and plugins/, no examples,
#   .venv/bin first on PATH, and a `lakeops_default` connection to ./warehouse unless one is set.
# Then:  airflow db migrate && airflow dags reserialize && airflow dags test lakeops_maintenance
_lakeops_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export AIRFLOW_HOME="${AIRFLOW_HOME:-$_lakeops_repo/.airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$_lakeops_repo/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$_lakeops_repo/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export PYSPARK_PYTHON="$_lakeops_repo/.venv/bin/python"
export PATH="$_lakeops_repo/.venv/bin:$PATH"
if [ -z "${AIRFLOW_CONN_LAKEOPS_DEFAULT:-}" ]; then
  export AIRFLOW_CONN_LAKEOPS_DEFAULT="{\"conn_type\": \"lakeops\", \"host\": \"$_lakeops_repo/warehouse\"}"
fi
unset _lakeops_repo
