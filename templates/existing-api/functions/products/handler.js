// The Express app on Lambda behind API Gateway, as serverless-http wraps any Express app.
import serverless from 'serverless-http'
import { app } from './app.js'

export const handler = serverless(app)
