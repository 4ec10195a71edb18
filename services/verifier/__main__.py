from services.verifier.service import setup
from shared.service import serve

serve("verifier", setup)
