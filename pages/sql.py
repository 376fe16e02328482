"""SQL: ask the store what the pages do not ask, one read-only SELECT at a time.

The query runs in a child process that opens the store read-only with external access disabled and
its configuration locked (profiler/storage/console.py); a query a link carries is shown, never run,
until the reader presses Run."""
import streamlit as st

from profiler.analysis.reads import schema_browser
from profiler.present import ui
from profiler.analysis.reads.schema_browser import MAX_QUERY_CHARS, MAX_ROWS, TIME_LIMIT_S

RESULT_KEY = "sql-result"   # (query text, ConsoleResult) of the last query run in this session
SCHEMA_COLUMNS = {"name": st.column_config.TextColumn("name", width="medium"),
                  "kind": st.column_config.TextColumn("kind"),
                  "module": st.column_config.TextColumn("module"),
                  "about": st.column_config.TextColumn("about", width="large"),
                  "call": st.column_config.TextColumn("call (macros)", width="large")}


def schema_section(store) -> None:
    """The documented tables, views and macros, and the columns of one table or view."""
    with st.expander("Schema: the store's tables and views, the SQL library's macros"):
        docs = schema_browser.schema_table()
        ui.table(docs, column_config=SCHEMA_COLUMNS, hide_index=True, width="stretch", height=300)
        relations = list(docs.loc[docs["kind"].isin(["table", "view"]), "name"])
        pick = st.selectbox("Columns of", relations, index=relations.index("traces"))
        ui.table(schema_browser.column_table(store, pick), hide_index=True, width="stretch")


st.title("SQL")
state = ui.view_state("sql")
st.caption(f"One SELECT over the store, run read-only in a separate process: no writes, no files, "
           f"no extensions, no network. At most {MAX_ROWS:,} rows come back and a query stops after "
           f"{TIME_LIMIT_S:.0f} s. Times are integer nanoseconds; the macros of the metrics layer "
           f"(run_metrics, iteration_metrics, ...) give every figure the pages show.")
linked = state.filter("sql")
with ui.guard():
    store = ui.get_store()
    schema_section(store)
    sql = st.text_area("Query (one SELECT)", value=linked or schema_browser.EXAMPLE, height=170,
                       max_chars=MAX_QUERY_CHARS, key="sql-text")
    note = st.empty()   # says a linked query has not run; filled once the button is read
    shown = st.session_state.get(RESULT_KEY)
    if st.button("Run query", type="primary", icon=":material/play_arrow:"):
        st.session_state.pop(RESULT_KEY, None)
        state = ui.update_view(state, filters=state.with_filter("sql", sql).filters)
        shown = (sql, schema_browser.run_select(store, sql))
        st.session_state[RESULT_KEY] = shown
    if linked and sql == linked and not (shown and shown[0] == sql):
        note.info("This query came with the link and has not run: read it, then press Run query.")
    if shown and shown[0] == sql:
        result = shown[1]
        more = f" (the first {result.max_rows:,}: the query has more)" if result.truncated else ""
        st.caption(f"{len(result.rows):,} rows{more}")
        ui.table(result.rows, hide_index=True, width="stretch", height=min(38 + 35 * len(result.rows), 560))
        ui.csv_download(result.rows, "query")
ui.copy_link(state)
