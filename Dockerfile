# groupcoord: a Kafka-protocol consumer-group coordinator.
#   docker build -t groupcoord .            # the server image (target "server")
#   docker build --target clients -t groupcoord-clients .   # + test dependencies, runs the integration tests
FROM python:3.11-slim AS server
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY server ./server
COPY assignors ./assignors
COPY pipeline ./pipeline
COPY membership ./membership
COPY testing ./testing
RUN pip install --no-cache-dir .
VOLUME /data
EXPOSE 9092
ENV GROUPCOORD_HOST=0.0.0.0 \
    GROUPCOORD_DATA_DIR=/data \
    GROUPCOORD_LOG_FORMAT=json
ENTRYPOINT ["groupcoord"]
CMD ["serve"]

FROM server AS clients
COPY tests ./tests
COPY bench ./bench
RUN pip install --no-cache-dir pytest pytest-asyncio pytest-timeout hypothesis "aiokafka==0.14.*" "kafka-python==3.0.*" confluent-kafka
ENTRYPOINT []
CMD ["python", "-m", "pytest", "-q", "-m", "integration", "tests/integration"]
