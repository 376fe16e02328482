# A Hugging Face GPU Space (Docker SDK) or any Docker host with an NVIDIA GPU; see docs/deploy.md.
FROM python:3.11-slim
RUN useradd -m -u 1000 user
USER user
ENV HOME=/home/user PATH=/home/user/.local/bin:$PATH \
    PROFILER_DB=/home/user/app/data/traces.duckdb \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
WORKDIR /home/user/app
COPY --chown=user requirements.txt .
RUN pip install --no-cache-dir --user -r requirements.txt
COPY --chown=user . .
EXPOSE 8501
CMD ["python", "-m", "profiler", "app", "--server.address", "0.0.0.0", "--server.port", "8501", \
     "--server.headless", "true", "--server.fileWatcherType", "none"]
