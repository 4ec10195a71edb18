from services.kpilot.main import main

main()
