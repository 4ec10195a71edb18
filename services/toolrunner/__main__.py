from services.toolrunner.service import setup
from shared.service import serve

serve("toolrunner", setup)
