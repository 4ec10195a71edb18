from services.telemetry.service import setup
from shared.service import serve

serve("telemetry", setup)
